/**
 * `ev-ingest purge INSTALLATION_ID`: deletes every row of an installation (samples, chunks, days,
 * sessions, devices, forwarding facts), beside a running server too, which forgets what it holds of
 * the installation within a second (deletion/service.ts). Asks for the id typed again, or `--yes`.
 */
import { helpOrOption, toStderr, toStdout, usage, withCommandStorage, type Out } from './command.ts';
import type { Committer } from '../db/committer.ts';
import { limits } from '../limits.ts';
import { isUuid } from '../uuid.ts';
import { yieldWriter } from '../deletion/retention.ts';
import { detachedInstallations, type deletionWrites } from '../deletion/store.ts';

export const PURGE_USAGE = `  ev-ingest purge ID [--yes]     delete every row of an installation (samples, consumption,
                                 sessions, devices, forwarding facts); asks for the id again unless --yes`;

/** Reads the confirmation line; the default reads standard input. */
export type Confirm = (prompt: string) => Promise<string | null>;

export async function purgeCommand(
  args: string[],
  out: Out = toStdout,
  err: Out = toStderr,
  confirm: Confirm = askOnStdin,
): Promise<number> {
  const yes = args.includes('--yes');
  const operands = args.filter((arg) => arg !== '--yes');
  const notOperands = helpOrOption(operands, PURGE_USAGE, out, err);
  if (notOperands !== undefined) return notOperands;
  const [id, ...rest] = operands;
  if (id === undefined || rest.length > 0) return usage(err, PURGE_USAGE);
  if (!isUuid(id)) {
    err(`ev-ingest: ${JSON.stringify(id)} is not an installation id (a UUID)\n`);
    return 2;
  }
  const installationId = id.toLowerCase();
  return withCommandStorage(err, async (storage) => {
    const prompt = `Type ${installationId} to delete all of its data, or anything else to stop: `;
    if (!yes && (await confirm(prompt))?.trim().toLowerCase() !== installationId) {
      err('ev-ingest: not confirmed; nothing was deleted\n');
      return 1;
    }
    const purged = await storage.committer.write('purgeInstallation', { installationId, at: Date.now() });
    // Its own samples, and those of a purge stopped half way before.
    const samples = await deleteDetachedSamples(storage.committer, detachedInstallations(storage.db));
    const rows = { samples, ...purged.deleted };
    if (Object.values(rows).every((count) => count === 0) && purged.samplesOf === null) {
      err(`ev-ingest: nothing is stored for installation ${installationId}\n`);
      return 1;
    }
    out(`purged ${installationId}: ${describe(rows)}\n`);
    return 0;
  });
}

/** Deletes the samples of detached installations a batch per write: a running server's writes go on between them. */
async function deleteDetachedSamples(
  committer: Committer<typeof deletionWrites>,
  installations: number[],
): Promise<number> {
  let total = 0;
  for (const installation of installations) {
    let after = -1;
    for (;;) {
      const started = performance.now();
      const { deleted, last } = await committer.write('deletePurgedSamples', {
        installation,
        after,
        limit: limits.deleteBatchSamples,
      });
      if (last === null) break;
      total += deleted;
      after = last;
      await yieldWriter(performance.now() - started);
    }
  }
  return total;
}

/** `table=count` for each table, as one line. */
function describe(rows: Record<string, number>): string {
  return Object.entries(rows)
    .map(([table, count]) => `${table}=${count}`)
    .join(' ');
}

/** Prompts on standard error and reads one line of standard input; null when it ends first. */
async function askOnStdin(prompt: string): Promise<string | null> {
  process.stderr.write(prompt);
  for await (const line of console) return line;
  return null;
}
