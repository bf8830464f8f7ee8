/** `ev-ingest backup FILE`: a consistent copy of the live database while the server goes on writing (db/backup.ts). */
import { linkSync } from 'node:fs';
import { backupDatabase, type LinkFile } from '../db/backup.ts';
import { commandDatabasePath, helpOrOption, toStderr, toStdout, usage, type Out } from './command.ts';

export const BACKUP_USAGE =
  '  ev-ingest backup FILE          copy the live database into FILE (which must not exist), server running';

/** What tests put in place of the environment's database and of the file system's hard link. */
export interface BackupSeams {
  databasePath?: string;
  link?: LinkFile;
}

export async function backupCommand(
  args: string[],
  out: Out = toStdout,
  err: Out = toStderr,
  { databasePath, link = linkSync }: BackupSeams = {},
): Promise<number> {
  const notOperands = helpOrOption(args, BACKUP_USAGE, out, err, { takesFile: true });
  if (notOperands !== undefined) return notOperands;
  if (args.length !== 1 || args[0] === '') {
    return usage(err, BACKUP_USAGE);
  }
  const source = databasePath ?? commandDatabasePath(); // read after the usage checks: `--help` needs no configuration
  const leftBehind: Out = (leftover) => err(`ev-ingest: ${leftover}\n`);
  try {
    const bytes = await stoppableBySignal((stopped) => backupDatabase(source, args[0]!, { stopped, leftBehind, link }));
    out(`backup of ${source} written to ${args[0]} (${bytes} bytes)\n`);
    return 0;
  } catch (error) {
    err(`ev-ingest: backup failed: ${(error as Error).message}\n`);
    return 1;
  }
}

/**
 * Runs `work` with SIGTERM and SIGINT turned into a rejection of `stopped`, so that an interrupted
 * backup removes its partial copy as a failed one does; without a listener either signal would end
 * the process at once, leaving it behind.
 */
async function stoppableBySignal<T>(work: (stopped: Promise<never>) => Promise<T>): Promise<T> {
  let stop!: (signal: NodeJS.Signals) => void;
  const stopped = new Promise<never>((_, reject) => (stop = (signal) => reject(new Error(`stopped by ${signal}`))));
  process.on('SIGTERM', stop).on('SIGINT', stop);
  try {
    return await work(stopped);
  } finally {
    process.off('SIGTERM', stop).off('SIGINT', stop);
  }
}
