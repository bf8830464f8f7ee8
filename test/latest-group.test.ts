/** Each installation's newest sample is recorded once per commit group, as the writes in turn would have left it. */
import { expect, test } from 'bun:test';
import { join } from 'node:path';
import { commitGroup, type WriteOp } from '../src/db/group.ts';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';
import { writeOps } from '../src/db/writes.ts';
import { sampleFieldNames } from '../src/telemetry/fields.ts';
import type { SampleRow } from '../src/telemetry/model.ts';
import { sampleWrite } from '../src/telemetry/store.ts';
import { INSTALLATION, OTHER_INSTALLATION, tempDir } from './support.ts';

const rows = (...utcs: number[]): SampleRow[] =>
  utcs.map((utc) => [utc, 50, ...sampleFieldNames.slice(1).map(() => null)]);
const store = (installationId: string, utcs: number[], receivedAt: number) => ({
  op: 'storeSamples',
  args: sampleWrite(installationId, 0, false, rows(...utcs), receivedAt),
});

test('one update per installation: the newest utc, the last batch holding it; a write rolled back adds nothing', () => {
  const db = openDatabase(join(tempDir(), 'ev-ingest.db'), 'fast');
  migrate(db);
  db.run('CREATE TEMP TABLE updates (n INTEGER)');
  db.run('INSERT INTO updates VALUES (0)');
  db.run('CREATE TEMP TRIGGER counted AFTER UPDATE ON installations BEGIN UPDATE updates SET n = n + 1; END');
  const storeThenFail: WriteOp = (db, args, end) => {
    writeOps.storeSamples!(db, args, end);
    throw new Error('a check after the write failed');
  };
  const outcomes = commitGroup(db, { ...writeOps, storeThenFail }, [
    store(INSTALLATION, [100, 101], 1_000),
    store(INSTALLATION, [200, 201], 2_000),
    store(OTHER_INSTALLATION, [300], 2_500),
    store(INSTALLATION, [150], 3_000),
    store(INSTALLATION, [201], 4_000), // the newest again, re-sent: its time wins, as it came last
    { op: 'storeThenFail', args: sampleWrite(INSTALLATION, 0, false, rows(900), 5_000) },
  ]);
  expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true, true, true, true, false]);
  expect(db.query('SELECT n FROM updates').get()).toEqual({ n: 2 });
  expect(
    db.query('SELECT uuid, latest_utc AS utc, latest_received_at AS at FROM installations ORDER BY id').all(),
  ).toEqual([
    { uuid: INSTALLATION, utc: 201, at: 4_000 },
    { uuid: OTHER_INSTALLATION, utc: 300, at: 2_500 },
  ]);

  // A later group with only older samples leaves the newest as it was.
  commitGroup(db, writeOps, [store(INSTALLATION, [120], 6_000)]);
  expect(db.query('SELECT latest_utc AS utc, latest_received_at AS at FROM installations WHERE id = 1').get()).toEqual({
    utc: 201,
    at: 4_000,
  });
  db.close();
});
