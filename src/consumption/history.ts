/**
 * The consumption feature's state: chunk writes, the history answer, serialized once per installation
 * and kept until that installation's next chunk write, and the start-up's rebuild of sums without a unit.
 */
import type { Database } from 'bun:sqlite';
import type { Committer } from '../db/committer.ts';
import { StorageError } from '../db/open.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import type { Chunk } from './model.ts';
import { hasSumsWithoutUnit, readHistory, type StoredHistory } from './store.ts';
import { fromStored, minus, valuesOf, ZERO, type DayValues } from './totals.ts';

interface HistoryRecord {
  date: string;
  day: DayValues;
  sohPercent?: number;
  /** Every day up to and including this one, days beyond the 400 returned included. */
  lifetime: DayValues;
}

interface History {
  records: HistoryRecord[];
  lifetime: DayValues;
}

export class Consumption {
  /** Serialized answers by installation, the least recently read first: the order of eviction. */
  private readonly answers = new Map<string, string>();

  constructor(
    private readonly db: Database,
    private readonly committer: Committer,
  ) {}

  /**
   * At start-up, before any request: rebuilds the sums an earlier build wrote without their unit. A
   * failure refuses the start, as a failed migration does: those sums cannot be read.
   */
  async rebuildSumsWithoutUnit(log: Logger): Promise<void> {
    try {
      if (!hasSumsWithoutUnit(this.db)) return;
      const started = performance.now();
      const rebuilt = await this.committer.write('rebuildSumsWithoutUnit', undefined);
      log.info('consumption.sums_rebuilt', { ...rebuilt, ms: Math.round(performance.now() - started) });
    } catch (error) {
      throw new StorageError(`consumption sums of an earlier build cannot be rebuilt: ${(error as Error).message}`);
    }
  }

  async putChunk(chunk: Chunk): Promise<void> {
    try {
      await this.committer.write('putChunk', chunk);
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

/** Each record's lifetime is the total less every newer day, which needs no day beyond the 400. */
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
