/**
 * The only reader of the environment. The environment is checked once, at start-up; anything
 * unusable stops the process with one line naming the variable and the rule.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { limits } from './limits.ts';
import type { LogFormat, LogLevel } from './log.ts';
import { isUuid } from './uuid.ts';

export type Durability = 'full' | 'fast';

export interface PlannerConfig {
  url: string;
  apiKey: string | null;
  /** Token for every installation without one of its own. */
  defaultToken: string | null;
  /** Per-installation tokens (lower-case installation id → token), overriding the default. */
  tokens: ReadonlyMap<string, string>;
}

export interface Config {
  databasePath: string;
  durability: Durability;
  logLevel: LogLevel;
  /** LOG_FORMAT: logfmt lines (`text`) or one JSON object a line (`json`). */
  logFormat: LogFormat;
  /** METRICS_LISTEN: where Prometheus scrapes `/metrics`; null (the default) serves no metrics. */
  metricsListen: { host: string; port: number } | null;
  /** Writes per group transaction at most (EV_INGEST_BENCH_GROUP_WRITES): a benchmark's switch, unset in service. */
  maxGroupWrites?: number;
  ingestToken: string;
  approvalPassword: string | null;
  publicUrl: string;
  trustProxy: boolean;
  host: string;
  port: number;
  planner: PlannerConfig;
  /** TELEMETRY_RETENTION_DAYS: samples older than this many days are deleted; unset keeps them for ever. */
  telemetryRetentionDays: number | null;
}

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const SECRET_VARIABLES = [
  'INGEST_TOKEN',
  'APPROVAL_PASSWORD',
  'PLANNER_API_KEY',
  'PLANNER_TOKEN',
  'PLANNER_TOKENS',
] as const;

export const DEFAULT_PLANNER_URL = 'https://api.iternio.com/1/tlm/send';
const DEFAULT_DATABASE_PATH = './data/ev-ingest.db';

/** Where settings come from: the process environment or the `.env` file, named so that a refusal can say which. */
interface Source {
  name: string;
  env: Env;
}

/** The effective environment: the process environment over the `.env` file of the working directory. */
export function readEnvironment(processEnv: Env = process.env, cwd: string = process.cwd()): Env {
  return overlaid(readSources(processEnv, cwd));
}

/** The server's environment: the effective one, every `<SECRET>_FILE` replaced by the file's contents. */
export function readServerEnvironment(processEnv: Env = process.env, cwd: string = process.cwd()): Env {
  const sources = readSources(processEnv, cwd);
  for (const source of sources) refuseBothForms(source);
  return withSecrets(overlaid(sources));
}

/** The process environment and the `.env` file, in that order. */
function readSources(processEnv: Env, cwd: string): [environment: Source, dotenv: Source] {
  const dotenvPath = join(cwd, '.env');
  // Read without checking first: a .env that disappears after a check would refuse the start (ENOENT).
  const dotenv = readSettingsFile(dotenvPath, (code) => `${dotenvPath} cannot be read (${code}); fix or remove it`, '');
  return [
    // An empty variable counts as unset, here too: it does not hide the .env file's value.
    {
      name: 'the environment',
      env: Object.fromEntries(Object.entries(processEnv).filter(([, value]) => isSet(value))),
    },
    { name: dotenvPath, env: parseDotenv(dotenv) },
  ];
}

/**
 * The environment over the `.env` file. A secret goes over as a whole: given in the environment as
 * `<NAME>` or `<NAME>_FILE`, it replaces both forms of the `.env` file, so that the two never clash.
 */
function overlaid([environment, dotenv]: [Source, Source]): Env {
  const fromDotenv = { ...dotenv.env };
  for (const name of SECRET_VARIABLES) {
    if (secretForms(name).some((form) => isSet(environment.env[form]))) {
      for (const form of secretForms(name)) delete fromDotenv[form];
    }
  }
  return { ...fromDotenv, ...environment.env };
}

/** A secret set both plainly and as `<NAME>_FILE` in one source: which one was meant is unknown. */
function refuseBothForms(source: Source): void {
  for (const name of SECRET_VARIABLES) {
    if (secretForms(name).every((form) => isSet(source.env[form]))) {
      throw new ConfigError(`${name} and ${name}_FILE are both set in ${source.name}; set only one of them`);
    }
  }
}

function secretForms(name: string): [string, string] {
  return [name, `${name}_FILE`];
}

/** Empty counts as unset. */
function isSet(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}

/**
 * A settings file's text; where `absentAs` is given, a file that does not exist reads as it. Any other
 * OS error refuses the start with `refusal(code)`, one line that never holds the contents.
 */
function readSettingsFile(path: string, refusal: (code: string) => string, absentAs?: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && absentAs !== undefined) return absentAs;
    throw new ConfigError(refusal(code ?? 'error'));
  }
}

/**
 * The environment with every `<SECRET>_FILE` replaced by the file's contents, the two forms of a secret
 * never both set (refuseBothForms, overlaid). Only the server needs its secrets; the commands, which
 * need only DATABASE_PATH, must work without them.
 */
function withSecrets(env: Env): Env {
  const resolved: Env = { ...env };
  for (const name of SECRET_VARIABLES) {
    const filePath = secretFilePath(resolved, name);
    if (filePath !== undefined) resolved[name] = readSecretFile(name, filePath);
  }
  return resolved;
}

/** The file `<name>_FILE` names, if it is set (empty counts as unset). */
function secretFilePath(env: Env, name: string): string | undefined {
  const path = env[`${name}_FILE`];
  return isSet(path) ? path : undefined;
}

function readSecretFile(name: string, path: string): string {
  const refusal = (code: string) => `${name}_FILE names a file that cannot be read (${code})`;
  const secret = readSettingsFile(path, refusal).replace(/\r?\n$/, '');
  // An empty plain variable means unset; an empty secret file is a provisioning mistake, not a choice.
  if (secret === '')
    throw new ConfigError(`${name}_FILE names an empty file; put the value in it or unset ${name}_FILE`);
  return secret;
}

/** Parses `KEY=value` lines: `#` comments, an optional `export`, single or double quotes. */
function parseDotenv(text: string): Env {
  const env: Env = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) continue;
    env[match[1]!] = unquote(match[2]!);
  }
  return env;
}

/** A value as written after `=`: quoted (a comment after the closing quote dropped) or bare (` #…` dropped). */
function unquote(value: string): string {
  const quote = value[0];
  if (quote === '"' || quote === "'") {
    const end = quotedEnd(value, quote);
    if (end > 0) {
      const inner = value.slice(1, end);
      // One pass, so that `\\n` is a backslash and an n, not a backslash and a line break.
      return quote === '"'
        ? inner.replace(/\\([n"\\])/g, (_, escaped: string) => (escaped === 'n' ? '\n' : escaped))
        : inner;
    }
  }
  return value.replace(/\s+#.*$/, '');
}

/** Where the quoted part of `value` ends, or -1 when the value is not quoted after all. */
function quotedEnd(value: string, quote: string): number {
  const close = closingQuote(value, quote);
  if (close > 0 && /^\s*(#.*)?$/.test(value.slice(close + 1))) return close; // a comment may follow
  return value.length > 1 && value.endsWith(quote) ? value.length - 1 : -1; // an inner quote left unescaped
}

/** Where the quote that opens `value` closes: the next one, past escaped characters inside double quotes. */
function closingQuote(value: string, quote: string): number {
  for (let i = 1; i < value.length; i++) {
    if (quote === '"' && value[i] === '\\') i++;
    else if (value[i] === quote) return i;
  }
  return -1;
}

/** Where the database is: all the command-line tools read, so no server setting can stop them. */
export function databasePath(env: Env): string {
  return nonEmpty(env.DATABASE_PATH) ?? DEFAULT_DATABASE_PATH;
}

/** Only the durability benchmark sets it (1: one transaction per request, its baseline). */
function benchGroupWrites(value: string | undefined): number | undefined {
  const text = nonEmpty(value);
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    throw new ConfigError(
      'EV_INGEST_BENCH_GROUP_WRITES must be a positive whole number (a benchmark switch; leave it unset)',
    );
  }
  return Number(text);
}

/** Everything the server needs, checked. */
export function serveConfig(env: Env): Config {
  return {
    databasePath: databasePath(env),
    durability: oneOf(env, 'DURABILITY', ['full', 'fast'], 'full'),
    logLevel: oneOf(env, 'LOG_LEVEL', ['debug', 'info', 'warn', 'error'], 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', ['text', 'json'], 'text'),
    metricsListen: metricsListen(env.METRICS_LISTEN),
    maxGroupWrites: benchGroupWrites(env.EV_INGEST_BENCH_GROUP_WRITES),
    ingestToken: ingestToken(env),
    approvalPassword: approvalPassword(env),
    publicUrl: publicUrl(env.PUBLIC_URL),
    trustProxy: oneOf(env, 'TRUST_PROXY', ['0', '1'], '0') === '1',
    ...listenAddress(env),
    planner: plannerConfig(env),
    telemetryRetentionDays: retentionDays(env.TELEMETRY_RETENTION_DAYS),
  };
}

/** HOST and PORT: where the server listens; the health check reads them too, and no secret. */
export function listenAddress(env: Env): Pick<Config, 'host' | 'port'> {
  return { host: nonEmpty(env.HOST) ?? '0.0.0.0', port: port(env.PORT) };
}

function retentionDays(value: string | undefined): number | null {
  const text = nonEmpty(value);
  if (text === undefined) return null;
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > limits.retentionDaysMax) {
    const range = `from 1 to ${limits.retentionDaysMax}`;
    throw new ConfigError(
      `TELEMETRY_RETENTION_DAYS must be a whole number of days ${range}; unset it to keep samples for ever`,
    );
  }
  return Number(text);
}

function ingestToken(env: Env): string {
  const value = env.INGEST_TOKEN;
  if (value) refuseUnsendable(env, 'INGEST_TOKEN', value);
  if (value === undefined || value.length < limits.ingestTokenMinChars) {
    throw new ConfigError(
      `INGEST_TOKEN must be set to at least ${limits.ingestTokenMinChars} characters` +
        (value ? ` (it has ${value.length})` : ''),
    );
  }
  return value;
}

function approvalPassword(env: Env): string | null {
  const value = env.APPROVAL_PASSWORD;
  if (!isSet(value)) return null;
  refuseUnsendable(env, 'APPROVAL_PASSWORD', value);
  if (value.length < limits.approvalPasswordMinChars) {
    throw new ConfigError(
      `APPROVAL_PASSWORD must have at least ${limits.approvalPasswordMinChars} characters ` +
        `(it has ${value.length}); unset it to turn pairing off`,
    );
  }
  // Every car app holds the shared token: as the approval password it would let any of them approve and revoke.
  if (value === env.INGEST_TOKEN) {
    throw new ConfigError(
      'APPROVAL_PASSWORD must differ from INGEST_TOKEN, which every car app holds; unset it to turn pairing off',
    );
  }
  return value;
}

/**
 * Refuses a secret that clients present (a Bearer header, the /pair form) holding what no client can send
 * as given: HTTP drops a header's outer whitespace and cannot carry a newline. Refused, never trimmed:
 * a trimmed secret would differ from the one the owner stored in the car. The message never holds the value.
 */
function refuseUnsendable(env: Env, name: 'INGEST_TOKEN' | 'APPROVAL_PASSWORD', secret: string): void {
  const rule = unsendableRule(secret);
  if (rule === null) return;
  const fromFile = secretFilePath(env, name) !== undefined;
  throw new ConfigError(
    `${fromFile ? `${name} from ${name}_FILE (only its one final newline is dropped)` : name} ${rule}`,
  );
}

function unsendableRule(secret: string): string | null {
  // trim() also takes Unicode spaces and a file's byte-order mark: invisible, and never part of what a car sends.
  if (secret.trim() === '') return 'must not be only whitespace';
  if (secret.trim() !== secret) return 'must not begin or end with whitespace';
  if (/[\x00-\x1f\x7f]/.test(secret)) return 'must not hold a control character (a newline, a tab or another)';
  // Bun reads header bytes as Latin-1 and fetch refuses to send more: only ASCII reaches it as given.
  if (/[^\x20-\x7e]/.test(secret))
    return 'must hold only printable ASCII characters (a Bearer header cannot carry others)';
  return null;
}

function publicUrl(value: string | undefined): string {
  const url = nonEmpty(value);
  if (url === undefined) return '';
  if (!isHttpUrl(url)) throw new ConfigError('PUBLIC_URL must be an http:// or https:// URL');
  // The raw text, not URL.search/hash: those are empty for a bare trailing `?` or `#`.
  if (/[?#]/.test(url))
    throw new ConfigError('PUBLIC_URL must have no query or fragment (/pair?code=… is appended to it)');
  return url.replace(/\/+$/, '');
}

function port(value: string | undefined): number {
  const text = nonEmpty(value);
  if (text === undefined) return 8080;
  const number = Number(text);
  if (!/^\d+$/.test(text) || number > 65_535) {
    throw new ConfigError('PORT must be a whole number from 0 to 65535 (0 picks a free port)');
  }
  return number;
}

/** `HOST:PORT`, an IPv6 address in brackets (`[::1]:9464`). */
function metricsListen(value: string | undefined): Config['metricsListen'] {
  const text = nonEmpty(value);
  if (text === undefined) return null;
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(text);
  if (!match || Number(match[3]) > 65_535) {
    throw new ConfigError('METRICS_LISTEN must be HOST:PORT, such as 127.0.0.1:9464 or [::1]:9464');
  }
  return { host: (match[1] ?? match[2])!, port: Number(match[3]) };
}

function plannerConfig(env: Env): PlannerConfig {
  const url = nonEmpty(env.PLANNER_URL) ?? DEFAULT_PLANNER_URL;
  if (!isHttpUrl(url)) throw new ConfigError('PLANNER_URL must be an http:// or https:// URL');
  return {
    url,
    apiKey: nonEmpty(env.PLANNER_API_KEY) ?? null,
    defaultToken: nonEmpty(env.PLANNER_TOKEN) ?? null,
    tokens: plannerTokens(env.PLANNER_TOKENS),
  };
}

/**
 * `PLANNER_TOKENS`: `<installationId>=<token>` pairs, separated by commas or line breaks (a file given
 * by `PLANNER_TOKENS_FILE` may hold one a line). Never echoes a token.
 */
function plannerTokens(value: string | undefined): Map<string, string> {
  const tokens = new Map<string, string>();
  for (const [index, pair] of (nonEmpty(value)?.split(/,|\r?\n/) ?? []).entries()) {
    if (pair.trim() === '') continue; // a blank line, a trailing comma
    const separator = pair.indexOf('=');
    const id = pair.slice(0, Math.max(separator, 0)).trim().toLowerCase();
    const token = pair.slice(separator + 1).trim();
    if (separator < 0 || !isUuid(id) || token === '' || /\s/.test(token)) {
      throw new ConfigError(
        `PLANNER_TOKENS entry ${index + 1} must be <installationId>=<token> with a UUID and a token without whitespace`,
      );
    }
    if (tokens.has(id)) throw new ConfigError(`PLANNER_TOKENS names installation ${id} twice; give each one token`);
    tokens.set(id, token);
  }
  return tokens;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const value = nonEmpty(env[name]);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/** Whether `value` is an absolute http:// or https:// URL. */
export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
