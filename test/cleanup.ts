/** Preloaded by bunfig.toml: hooks of the whole test run (bun test fires no process exit event). */
import { afterAll } from 'bun:test';
import { removeTempDirs } from './support.ts';

afterAll(removeTempDirs);
