/** Preloaded by bunfig.toml: hooks of the whole test run (bun test fires no process exit event). */
import { afterAll } from 'bun:test';
import { killStrayBinaries } from './binary.ts';
import { removeTempDirs } from './support.ts';

// The binaries first: their folders go next.
afterAll(() => {
  killStrayBinaries();
  removeTempDirs();
});
