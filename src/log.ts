/**
 * Logger writing one logfmt line per event. Lines are buffered and flushed after the current
 * tick, so writing a log line never blocks a request on stdout.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | null | undefined>;

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  /** Writes what is buffered now; used at exit. */
  flush(): void;
}

export type LineSink = (text: string) => void;

const stdoutSink: LineSink = (text) => process.stdout.write(text);

export function createLogger(level: LogLevel, sink: LineSink = stdoutSink): Logger {
  const threshold = rank[level];
  const timestamp = clockText();
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

function formatLine(at: string, level: LogLevel, event: string, fields?: LogFields): string {
  let line = `${at} ${level} ${event}`;
  for (const key in fields) {
    const value = fields[key];
    if (value !== undefined) line += ` ${key}=${formatValue(value)}`;
  }
  return `${line}\n`;
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
export function createMemoryLogger(level: LogLevel = 'debug'): Logger & { readonly lines: string[] } {
  const kept: string[] = [];
  const logger = createLogger(level, (text) => kept.push(...text.split('\n').filter(Boolean)));
  return Object.defineProperty(logger, 'lines', {
    get: () => (logger.flush(), kept),
  }) as Logger & { readonly lines: string[] };
}
