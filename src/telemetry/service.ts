/** The telemetry feature's state: storing a batch's samples, then telling the forwarder what changed. */
import type { Committer } from '../db/committer.ts';
import type { SampleForwarder } from './outbox.ts';
import type { Logger } from '../log.ts';
import { isUnknownFieldNote, type Batch, type DropReason } from './model.ts';
import { sampleWrite, type telemetryWrites } from './store.ts';

export class Telemetry {
  /** Samples stored, and values dropped by kind, since the start (the metrics read them). */
  samplesStored = 0;
  readonly valuesDropped = new Map<DropReason, number>();

  constructor(
    private readonly committer: Committer<typeof telemetryWrites>,
    private readonly forwarder: SampleForwarder,
    private readonly now: () => number,
  ) {}

  /** Stores the usable samples in one write; tells the forwarder what now waits and if waiting ones were rewritten. */
  async store(batch: Batch): Promise<void> {
    if (batch.rows.length > 0) await this.storeRows(batch);
    for (const [reason, count] of batch.droppedReasons ?? []) {
      this.valuesDropped.set(reason, (this.valuesDropped.get(reason) ?? 0) + count);
    }
  }

  private async storeRows({ installationId, plannerSentUtc, rows }: Batch): Promise<void> {
    const forward = this.forwarder.forwards(installationId);
    const { added, rewritten } = await this.committer.write(
      'storeSamples',
      sampleWrite(installationId, plannerSentUtc, forward, rows, this.now()),
    );
    if (added.length > 0 || rewritten)
      this.forwarder.stored(installationId, { added: added.map((row) => rows[row]!), rewritten });
    this.samplesStored += rows.length;
  }
}

/**
 * One line for a batch with dropped values, each description as `describe` words it. Descriptions never
 * hold a coordinate, so they may be logged; those of unknown fields name a key the client chose (a token
 * sent as a key would land in the log), so they are only counted.
 */
export function logDropped(log: Logger, batch: Batch, describe = (note: string) => note): void {
  if (batch.droppedCount === 0) return;
  log.info('telemetry.dropped', {
    installation: batch.installationId,
    count: batch.droppedCount,
    unknownFields: batch.droppedReasons?.get('unknown_field') ?? 0,
    first: JSON.stringify(batch.dropped.filter((note) => !isUnknownFieldNote(note)).map(describe)),
  });
}
