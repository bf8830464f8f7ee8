/**
 * Where a Worker's module is, given by its path below src/ (`db/backup.worker.ts`). In the compiled binary
 * every module shares the entry's URL and each worker is an entry point of its own (see the build script).
 */
export function workerEntry(path: string): string {
  return import.meta.url.startsWith('file:///$bunfs/') ? `./${path}` : new URL(`../${path}`, import.meta.url).href;
}
