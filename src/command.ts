/** What the binary's commands (`devices`, `backup`) share: where they write and which database they use. */
import { readEnvironment, storageConfig, type StorageConfig } from './config.ts';

export type Out = (text: string) => void;

export const toStdout: Out = (text) => process.stdout.write(text);
export const toStderr: Out = (text) => process.stderr.write(text);

/** The database settings from the environment and `.env`; the server's secrets are never read. */
export function commandStorage(): StorageConfig {
  return storageConfig(readEnvironment());
}

/** Prints a command's usage; answers the exit code of a wrong call. */
export function usage(err: Out, text: string): number {
  err(`ev-ingest: usage:\n${text}\n`);
  return 2;
}
