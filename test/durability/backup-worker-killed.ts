/**
 * Preloaded into `ev-ingest backup` by the backup test (`bun --preload`): every Worker is ended the
 * moment it is handed its work, without a word, as a kill or an out-of-memory end would leave it.
 */
const RealWorker = globalThis.Worker;

globalThis.Worker = class extends RealWorker {
  override postMessage(): void {
    this.terminate();
  }
};
