/**
 * Logger writing one line per event: logfmt (`text`) or one JSON object (`json`), with the same
 * fields. Lines are buffered and flushed after the current tick, so writing a log line never blocks
 * a request on stdout. Events and their fields are those of the catalogue (log-events.ts).
 */
import type { LOG_EVENTS, LogEventName } from './log-events.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'text' | 'json';
export type LogValue = string | number | boolean | null | undefined;
export type LogFields = Record<string, LogValue>;

type Catalogue = typeof LOG_EVENTS;
/** The catalogued events of one level. */
type EventAt<L extends LogLevel> = { [E in LogEventName]: Catalogue[E]['level'] extends L ? E : never }[LogEventName];
/** The fields an event may carry, each optional. */
type FieldsOf<E extends LogEventName> = { [K in Catalogue[E]['fields'][number]]?: LogValue };

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug<E extends EventAt<'debug'>>(event: E, fields?: FieldsOf<E>): void;
  info<E extends EventAt<'info'>>(event: E, fields?: FieldsOf<E>): void;
  warn<E extends EventAt<'warn'>>(event: E, fields?: FieldsOf<E>): void;
  error<E extends EventAt<'error'>>(event: E, fields?: FieldsOf<E>): void;
  /** Writes what is buffered now; used at exit. */
  flush(): void;
}

export type LineSink = (text: string) => void;

const stdoutSink: LineSink = (text) => process.stdout.write(text);

export function createLogger(level: LogLevel, sink: LineSink = stdoutSink, format: LogFormat = 'text'): Logger {
  const threshold = rank[level];
  const timestamp = clockText();
  const formatLine = format === 'json' ? jsonLine : textLine;
  let pending = '';
  let scheduled = false;

  const flush = () => {
    scheduled = false;
    if (pending === '') return;
    const text = pending;
    pending = '';
    sink(text);
  };

  const write = (lvl: LogLevel, event: string, fields?: LogFields) => {
    if (rank[lvl] < threshold) return;
    pending += formatLine(timestamp(), lvl, event, fields);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  return {
    debug: (e, f) => write('debug', e, f),
    info: (e, f) => write('info', e, f),
    warn: (e, f) => write('warn', e, f),
    error: (e, f) => write('error', e, f),
    flush,
  };
}

/** One event as one logfmt line; the catalogue is the way to read it. */
export function textLine(at: string, level: LogLevel, event: string, fields?: LogFields): string {
  let line = `${at} ${level} ${event}`;
  for (const key in fields) {
    const value = fields[key];
    if (value !== undefined) line += ` ${key}=${formatValue(value)}`;
  }
  return `${line}\n`;
}

/** One event as one JSON object a line: `time`, `level`, `event`, then the fields as in `textLine`. */
export function jsonLine(at: string, level: LogLevel, event: string, fields?: LogFields): string {
  let line = `{"time":"${at}","level":"${level}","event":${JSON.stringify(event)}`;
  for (const key in fields) {
    const value = fields[key];
    // JSON.stringify of a number that is not finite is null, where String() would write invalid JSON.
    if (value !== undefined) line += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
  }
  return line + '}\n';
}

const BARE = /^[\w.:/@+-]+$/;

function formatValue(value: string | number | boolean | null): string {
  if (typeof value !== 'string') return String(value);
  return BARE.test(value) ? value : JSON.stringify(value);
}

/** The current time as ISO text; under load many lines fall into one millisecond, which is formatted once. */
function clockText(): () => string {
  let stampMs = -1;
  let stamp = '';
  return () => {
    const ms = Date.now();
    if (ms !== stampMs) {
      stampMs = ms;
      stamp = new Date(ms).toISOString();
    }
    return stamp;
  };
}

/** A logger that keeps its lines, for tests that assert what was (not) logged. */
export function createMemoryLogger(
  level: LogLevel = 'debug',
  format: LogFormat = 'text',
): Logger & { readonly lines: string[] } {
  const kept: string[] = [];
  const logger = createLogger(level, (text) => kept.push(...text.split('\n').filter(Boolean)), format);
  return Object.defineProperty(logger, 'lines', {
    get: () => (logger.flush(), kept),
  }) as Logger & { readonly lines: string[] };
}
