import type { Committer } from '../db/committer.ts';
import type { ChargingSession } from './model.ts';
import type { chargingWrites } from './store.ts';

/** The feature's side of the writer: sessions stored once their write commits. */
export class ChargingSessions {
  /** Sessions stored since the start (the metrics read it). */
  stored = 0;

  constructor(
    private readonly committer: Committer<typeof chargingWrites>,
    private readonly now: () => number,
  ) {}

  async put(session: ChargingSession): Promise<void> {
    await this.committer.write('putChargingSession', { ...session, receivedAt: this.now() });
    this.stored += 1;
  }
}
