/** Starting and stopping the checkpointer thread (checkpointer.worker.ts). */
import type { Durability } from '../config.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import type { ToCheckpointer } from './protocol.ts';
import { workerEntry } from './worker-entry.ts';

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * Starts the checkpointer without waiting for it: serving need not wait for a thread that only
 * tidies up. Should it fail, commits still checkpoint by themselves past ~200 MiB of WAL (open.ts).
 */
export function startCheckpointer(path: string, durability: Durability, log?: Logger): Checkpointer {
  const worker = new Worker(workerEntry('checkpointer.worker.ts'));
  let failed = false;
  worker.addEventListener('error', (event) => {
    failed = true;
    log?.error('checkpointer.failed', { reason: event.message });
  });
  const post = (message: ToCheckpointer) => worker.postMessage(message);
  post({ type: 'start', path, durability, intervalMs: limits.checkpointIntervalMs });
  return {
    stop() {
      if (failed) {
        worker.terminate();
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const done = () => {
          worker.terminate();
          resolve();
        };
        worker.addEventListener('message', (event: MessageEvent<{ type: string }>) => event.data.type === 'stopped' && done());
        worker.addEventListener('error', done);
        post({ type: 'stop' });
      });
    },
  };
}
