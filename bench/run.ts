/**
 * `bun run bench`: every benchmark in turn, each in its own process against a freshly built binary.
 * One can be run alone: `bun bench/<name>.ts`. The machine is shared: read ratios, not absolutes.
 */
import { join } from 'node:path';
import { buildBinary } from './lib.ts';

const BENCHMARKS = [
  'foundation',
  'telemetry',
  'consumption',
  'planner',
  'durability',
  'relay',
  'metrics',
  'strangers',
  'export',
  'dashboard',
  'design',
];

await buildBinary();
let failed = 0;
for (const name of BENCHMARKS) {
  console.log(`\n=== ${name} ===`);
  const child = Bun.spawn([process.execPath, join(import.meta.dir, `${name}.ts`)], {
    env: { ...process.env, BENCH_BUILT: '1' },
    stdout: 'inherit',
    stderr: 'inherit',
  });
  if ((await child.exited) !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
