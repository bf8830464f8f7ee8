/** What the binary's commands (`devices`, `backup`) share: where they write and which database they use. */
import { databasePath, readEnvironment } from './config.ts';

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
