/**
 * Start-up warnings about what strangers on the same machine or a guesser could use: a data folder or a
 * database file that other users can read or write, and a secret of few distinct characters.
 */
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';

/** Permission bits of "others": read and write. */
const OTHERS_READ_WRITE = 0o006;

/** Fewer distinct characters than this make a secret guessable whatever its length (`aaaa…`, `abab…`). */
const DISTINCT_CHARS_MIN = 8;

export function warnAboutExposure(
  config: Pick<Config, 'databasePath' | 'ingestToken' | 'approvalPassword'>,
  log: Logger,
): void {
  const file = config.databasePath;
  for (const named of [{ folder: dirname(file) }, { file }]) {
    const path = Object.values(named)[0]!;
    const mode = statSync(path).mode & 0o777;
    if ((mode & OTHERS_READ_WRITE) === 0) continue;
    log.warn('storage.open_to_others', {
      ...named,
      mode: mode.toString(8),
      hint: `other users of this machine can read or change every location and token hash: chmod o-rw ${path}`,
    });
  }
  warnIfWeak('INGEST_TOKEN', config.ingestToken, log);
  if (config.approvalPassword !== null) warnIfWeak('APPROVAL_PASSWORD', config.approvalPassword, log);
}

/** Never logs the secret or how many distinct characters it has: only its name and the rule. */
function warnIfWeak(name: string, secret: string, log: Logger): void {
  if (new Set(secret).size >= DISTINCT_CHARS_MIN) return;
  log.warn('config.weak_secret', {
    variable: name,
    hint: `use at least ${DISTINCT_CHARS_MIN} different characters, e.g. openssl rand -hex 16`,
  });
}
