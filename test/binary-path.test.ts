/** The test helper builds the binary with the running bun, found by path: the suite needs no `bun` on PATH. */
import { expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { finished } from './support.ts';

test('compiledBinary builds with a PATH that has no bun on it', async () => {
  const helper = resolve(import.meta.dir, 'binary.ts');
  const child = Bun.spawn(
    [process.execPath, '-e', `console.log(await (await import(${JSON.stringify(helper)})).compiledBinary())`],
    { env: { PATH: '/usr/bin:/bin' }, stdout: 'pipe', stderr: 'pipe' },
  );
  const { code, stdout: out, stderr: err } = await finished(child);
  expect({ code, err: code === 0 ? '' : err }).toEqual({ code: 0, err: '' });
  expect(existsSync(out.trim())).toBe(true);
}, 120_000);
