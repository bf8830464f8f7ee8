/**
 * The consumption feature's state: chunk writes, the history answer, serialized once per installation
 * and kept until that installation's next chunk write.
 */
import type { Database } from 'bun:sqlite';
import type { Committer } from '../db/committer.ts';
import { RecentMap } from '../http/recent-map.ts';
import { limits } from '../limits.ts';
import type { Chunk } from './model.ts';
import {
  installationsWithChunks,
  readDaysAfter,
  readHistory,
  type StoredHistory,
  type consumptionWrites,
} from './store.ts';
import { fromStored, minus, plus, valuesOf, ZERO, type DayValues } from './totals.ts';

interface HistoryRecord {
  date: string;
  day: DayValues;
  sohPercent?: number;
  /** Every day up to and including this one, days beyond those returned (`limits.historyDays`) included. */
  lifetime: DayValues;
}

/** A day of the whole history: its sums, its state of health (null when no chunk carried one), the sums up to it. */
export interface ConsumptionDay {
  date: string;
  day: DayValues;
  sohPercent: number | null;
  lifetime: DayValues;
}

interface History {
  records: HistoryRecord[];
  lifetime: DayValues;
}

export class Consumption {
  /** Serialized answers by installation; the least recently read is forgotten first. */
  private readonly answers = new RecentMap<string, string>(limits.historyCachedInstallations);
  /** By installation, the count of changes when it last changed (a chunk stored, a purge noticed). */
  private readonly changedAt = new Map<string, number>();
  private changes = 0;
  /** Chunks stored since the start (the metrics read it). */
  chunksStored = 0;

  constructor(
    private readonly db: Database,
    private readonly committer: Committer<typeof consumptionWrites>,
  ) {}

  async putChunk(chunk: Chunk): Promise<void> {
    try {
      await this.committer.write('putChunk', chunk);
      this.chunksStored += 1;
    } finally {
      // Only after the commit: a read between an earlier forgetting and the commit would cache the old answer.
      this.changed(chunk.installationId);
    }
  }

  /** Every installation that has stored chunks. */
  installations(): string[] {
    return installationsWithChunks(this.db);
  }

  /** Forgets the installation's cached answer (its data was deleted by another process). */
  forget(installationId: string): void {
    this.changed(installationId);
  }

  /** A number that differs after every change of the installation's consumption: what a derived cache keys on. */
  version(installationId: string): number {
    return this.changedAt.get(installationId) ?? 0;
  }

  private changed(installationId: string): void {
    this.answers.delete(installationId);
    this.changedAt.set(installationId, ++this.changes);
  }

  /**
   * Every day of the installation, oldest first, with the running lifetime sums, a page at a time. The
   * sums are added up exactly as the pages are read, so they equal the history's lifetime.
   */
  *dayPages(installationId: string, pageRows: number = limits.exportPageRows): Generator<ConsumptionDay[]> {
    let lifetime = ZERO;
    let after = '';
    for (;;) {
      const page = readDaysAfter(this.db, installationId, after, pageRows);
      if (page.length > 0) {
        yield page.map((stored) => {
          const day = fromStored(stored);
          lifetime = plus(lifetime, day);
          return { date: stored.date, day: valuesOf(day), sohPercent: stored.sohPercent, lifetime: valuesOf(lifetime) };
        });
      }
      if (page.length < pageRows) return;
      after = page.at(-1)!.date;
    }
  }

  /** Every day of the installation, oldest first (see `dayPages`). */
  *days(installationId: string): Generator<ConsumptionDay> {
    for (const page of this.dayPages(installationId)) yield* page;
  }

  /** The history of a (lower-case) installation id as JSON text. */
  historyJson(installationId: string): string {
    const answer =
      this.answers.get(installationId) ??
      JSON.stringify(historyOf(readHistory(this.db, installationId, limits.historyDays)));
    this.answers.set(installationId, answer); // as the most recently read
    return answer;
  }
}

/** Each record's lifetime is the total less every newer day, which needs no day beyond those returned. */
function historyOf({ days, lifetime }: StoredHistory): History {
  let upToDay = lifetime ? fromStored(lifetime) : ZERO;
  const records = days.map((stored): HistoryRecord => {
    const day = fromStored(stored);
    const record: HistoryRecord = {
      date: stored.date,
      day: valuesOf(day),
      ...(stored.sohPercent !== null && { sohPercent: stored.sohPercent }),
      lifetime: valuesOf(upToDay),
    };
    upToDay = minus(upToDay, day);
    return record;
  });
  return { records, lifetime: records[0]?.lifetime ?? valuesOf(ZERO) };
}
