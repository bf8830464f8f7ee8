/** The log: LOG_LEVEL's threshold. */
import { expect, test } from 'bun:test';
import { createLogger, type LogLevel } from '../src/log.ts';

/** The events a logger at `level` writes of one line at each level. */
function written(level: LogLevel): string[] {
  const text: string[] = [];
  const log = createLogger(level, (chunk) => void text.push(chunk));
  log.debug('at.debug');
  log.info('at.info');
  log.warn('at.warn');
  log.error('at.error');
  log.flush();
  return text.join('').split('\n').filter(Boolean).map((line) => line.split(' ')[2]!);
}

test('LOG_LEVEL writes its own level and those above it, nothing below', () => {
  expect(written('debug')).toEqual(['at.debug', 'at.info', 'at.warn', 'at.error']);
  expect(written('info')).toEqual(['at.info', 'at.warn', 'at.error']);
  expect(written('warn')).toEqual(['at.warn', 'at.error']);
  expect(written('error')).toEqual(['at.error']);
});
