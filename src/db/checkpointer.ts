/** Starting and stopping the checkpointer thread (checkpointer.worker.ts). */
import type { Durability } from '../config.ts';
import { limits } from '../limits.ts';
import type { ToCheckpointer } from './protocol.ts';
import { workerEntry } from './worker-entry.ts';

export interface Checkpointer {
  stop(): Promise<void>;
}

export async function startCheckpointer(path: string, durability: Durability): Promise<Checkpointer> {
  const worker = new Worker(workerEntry('checkpointer.worker.ts'));
  const answer = (type: string) =>
    new Promise<void>((resolve, reject) => {
      worker.addEventListener('message', (event: MessageEvent<{ type: string }>) => event.data.type === type && resolve());
      worker.addEventListener('error', (event) => reject(new Error(`checkpointer failed: ${event.message}`)), { once: true });
    });
  const post = (message: ToCheckpointer) => worker.postMessage(message);
  const started = answer('started');
  post({ type: 'start', path, durability, intervalMs: limits.checkpointIntervalMs });
  await started;
  return {
    async stop() {
      const stopped = answer('stopped');
      post({ type: 'stop' });
      await stopped;
      worker.terminate();
    },
  };
}
