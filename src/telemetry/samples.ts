/** The telemetry feature's state: storing a batch's samples, then telling the forwarder what changed. */
import type { Committer } from '../db/committer.ts';
import type { SampleForwarder } from './forwarder.ts';
import type { Batch } from './model.ts';
import { sampleWrite } from './store.ts';

export class Telemetry {
  constructor(
    private readonly committer: Committer,
    private readonly forwarder: SampleForwarder,
    private readonly now: () => number,
  ) {}

  /** Stores the usable samples as one write; the forwarder learns of the samples this write made waiting, and whether it rewrote waiting ones. */
  async store({ installationId, plannerSentUtc, rows }: Batch): Promise<void> {
    if (rows.length === 0) return;
    const forward = this.forwarder.forwards(installationId);
    const { added, rewritten } = await this.committer.write('storeSamples', sampleWrite(installationId, plannerSentUtc, forward, rows, this.now()));
    if (added.length > 0 || rewritten) this.forwarder.stored(installationId, { added: added.map((row) => rows[row]!), rewritten });
  }
}
