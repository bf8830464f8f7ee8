/** What the binary's commands (`devices`, `backup`) share: where they write and which database they use. */
import { existsSync } from 'node:fs';
import { databasePath, readEnvironment } from '../config.ts';
import { openStorage, type Storage } from '../db/storage.ts';

export type Out = (text: string) => void;

export const toStdout: Out = (text) => process.stdout.write(text);
export const toStderr: Out = (text) => process.stderr.write(text);

/** `DATABASE_PATH` from the environment and `.env`; no other setting is read, the secrets least of all. */
export function commandDatabasePath(): string {
  return databasePath(readEnvironment());
}

/** Prints a command's usage; answers the exit code of a wrong call. */
export function usage(err: Out, text: string): number {
  err(`ev-ingest: usage:\n${text}\n`);
  return 2;
}

/**
 * Deals with the arguments after a command that are not its operands: `-h` or `--help` prints its
 * usage (exit 0); any other argument beginning with `-` is refused (exit 2), since no command has
 * options, rather than taken for a FILE or an ID; a command taking a FILE says how to name one
 * beginning with `-`. Answers undefined when the command may run.
 */
export function helpOrOption(
  args: string[],
  text: string,
  out: Out,
  err: Out,
  { takesFile = false } = {},
): number | undefined {
  if (args.some((arg) => arg === '-h' || arg === '--help')) {
    out(`Usage:\n${text}\n`);
    return 0;
  }
  const option = args.find((arg) => arg.startsWith('-'));
  if (option === undefined) return undefined;
  const fileHint = takesFile ? ` (for a file whose name begins with "-", write ./${option})` : '';
  err(`ev-ingest: unknown option ${JSON.stringify(option)}; no command has options${fileHint}\n`);
  return usage(err, text);
}

/**
 * Runs a command on the database at DATABASE_PATH, opened beside a running server with FULL durability
 * (a command's writes are rare and must hold); exit 1 saying so when there is no database there.
 */
export async function withCommandStorage(
  err: Out,
  run: (storage: Storage) => Promise<number> | number,
): Promise<number> {
  const path = commandDatabasePath();
  if (!existsSync(path)) {
    err(`ev-ingest: no database at ${path} (set DATABASE_PATH)\n`);
    return 1;
  }
  const storage = await openStorage({ databasePath: path, durability: 'full' });
  try {
    return await run(storage);
  } finally {
    await storage.close();
  }
}
