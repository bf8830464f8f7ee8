/**
 * The consumption feature's state: chunk writes, the history answer, serialized once per installation
 * and kept until that installation's next chunk write.
 */
import type { Database } from 'bun:sqlite';
import type { Committer } from '../db/committer.ts';
import { limits } from '../limits.ts';
import type { Chunk } from './model.ts';
import { type consumptionWrites, readHistory, type StoredHistory } from './store.ts';
import { fromStored, minus, valuesOf, ZERO, type DayValues } from './totals.ts';

interface HistoryRecord {
  date: string;
  day: DayValues;
  sohPercent?: number;
  /** Every day up to and including this one, days beyond those returned (`limits.historyDays`) included. */
  lifetime: DayValues;
}

interface History {
  records: HistoryRecord[];
  lifetime: DayValues;
}

export class Consumption {
  /** Serialized answers by installation, the least recently read first: the order of eviction. */
  private readonly answers = new Map<string, string>();
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
      this.answers.delete(chunk.installationId);
    }
  }

  /** The history of a (lower-case) installation id as JSON text. */
  historyJson(installationId: string): string {
    let answer = this.answers.get(installationId);
    if (answer === undefined) {
      answer = JSON.stringify(historyOf(readHistory(this.db, installationId, limits.historyDays)));
      if (this.answers.size >= limits.historyCachedInstallations) {
        this.answers.delete(this.answers.keys().next().value!);
      }
    } else {
      this.answers.delete(installationId); // to the back: the least recently read goes first
    }
    this.answers.set(installationId, answer);
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
