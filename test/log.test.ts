/** The log: LOG_LEVEL's threshold. */
import { expect, test } from 'bun:test';
import { createLogger, type LogLevel } from '../src/log.ts';

/** The events a logger at `level` writes of one line at each level. */
function written(level: LogLevel): string[] {
  const text: string[] = [];
  const log = createLogger(level, (chunk) => void text.push(chunk));
  log.debug('at.debug' as never); // no event is catalogued at debug level
  log.info('stopping');
  log.warn('stop.forced');
  log.error('stop.failed');
  log.flush();
  return text
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[2]!);
}

test('LOG_LEVEL writes its own level and those above it, nothing below', () => {
  expect(written('debug')).toEqual(['at.debug', 'stopping', 'stop.forced', 'stop.failed']);
  expect(written('info')).toEqual(['stopping', 'stop.forced', 'stop.failed']);
  expect(written('warn')).toEqual(['stop.forced', 'stop.failed']);
  expect(written('error')).toEqual(['stop.failed']);
});
