/**
 * Where a Worker's module is. In the compiled binary every module shares the entry's URL and each
 * worker is an entry point of its own (see the build script) below the bundle's root, at `db/<file>`.
 */
export function workerEntry(file: string): string {
  return import.meta.url.startsWith('file:///$bunfs/') ? `./db/${file}` : new URL(`./${file}`, import.meta.url).href;
}
