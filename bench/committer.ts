/**
 * The committer alone, without HTTP: 32 concurrent callers each handing in ten-row telemetry writes,
 * with FULL durability, `DURABILITY=fast`, and one transaction per write (group size one); the three
 * in rotation over BENCH_COMMITTER_ROUNDS rounds (default 3), each run on a new database.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openStorage } from '../src/db/storage.ts';
import { sampleFieldNames } from '../src/telemetry/fields.ts';
import type { SampleRow } from '../src/telemetry/model.ts';
import { sampleWrite } from '../src/telemetry/store.ts';
import { benchDir, knob, median, rotate } from './lib.ts';

const CALLERS = 32;
const SECONDS = knob('BENCH_SECONDS', 3);
const ROUNDS = knob('BENCH_COMMITTER_ROUNDS', 3);

/** Ten samples of one installation at consecutive seconds from `utc`. */
function tenRows(utc: number): SampleRow[] {
  return Array.from({ length: 10 }, (_, i) => {
    const row: SampleRow = [utc + i, ...sampleFieldNames.map(() => null)];
    row[1] = 71.5; // soc
    row[3] = 12.3; // power
    return row;
  });
}

async function writesPerSecond(durability: 'full' | 'fast', maxGroupWrites?: number): Promise<number> {
  const dir = benchDir();
  const storage = await openStorage({ databasePath: join(dir, 'ev.db'), durability, maxGroupWrites });
  const deadline = performance.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async (_, caller) => {
      const installationId = `00000000-0000-4000-8000-${String(caller).padStart(12, '0')}`;
      for (let utc = 1_764_000_000; performance.now() < deadline; utc += 10) {
        await storage.committer.write('storeSamples', sampleWrite(installationId, 0, false, tenRows(utc)));
        done += 1;
      }
    }),
  );
  const elapsed = SECONDS;
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
  return done / elapsed;
}

export async function benchCommitter(): Promise<void> {
  const [fulls, fasts, singles] = await rotate(ROUNDS, [
    () => writesPerSecond('full'),
    () => writesPerSecond('fast'),
    () => writesPerSecond('full', 1),
  ]);
  const [full, fast, single] = [median(fulls!), median(fasts!), median(singles!)];
  const runs = (rates: number[]) => `runs ${rates.map((rate) => rate.toFixed(0)).join(', ')}`;
  console.log(`committer alone, ${CALLERS} callers, ten-row writes (median of ${ROUNDS} rotating rounds):`);
  const rate = (perSecond: number) => `${perSecond.toFixed(0).padStart(8)} writes/s`;
  console.log(`  FULL, grouped            ${rate(full)} (target ≥ 15,000; ${runs(fulls!)})`);
  console.log(
    `  fast (NORMAL), grouped   ${rate(fast)}   FULL/fast ${((full / fast) * 100).toFixed(0)}% (${runs(fasts!)})`,
  );
  console.log(
    `  FULL, one per commit     ${rate(single)}   grouped/single ${(full / single).toFixed(1)}× (${runs(singles!)})`,
  );
}

if (import.meta.main) await benchCommitter();
