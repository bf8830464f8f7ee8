import { expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const SRC = resolve(import.meta.dir, '../src');
/** What the db layer may import besides itself: the settings, limits and version every layer shares. */
const SHARED = ['config.ts', 'limits.ts', 'version.ts'];

/** Every module a file imports, as paths below src/ (packages left out). */
function importsOf(file: string): string[] {
  const transpiler = new Bun.Transpiler({ loader: file.endsWith('x') ? 'tsx' : 'ts' });
  return transpiler
    .scanImports(readFileSync(file, 'utf8'))
    .map(({ path }) => path)
    .filter((path) => path.startsWith('.'))
    .map((path) => relative(SRC, resolve(file, '..', path)));
}

test('the db layer imports no feature, only itself and the shared settings', () => {
  const dbFiles = readdirSync(join(SRC, 'db')).map((name) => join(SRC, 'db', name));
  const outside = dbFiles.flatMap((file) =>
    importsOf(file)
      .filter((path) => !path.startsWith('db/') && !SHARED.includes(path))
      .map((path) => `${relative(SRC, file)} → ${path}`),
  );
  expect(outside).toEqual([]);
});
