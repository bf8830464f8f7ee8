/** The telemetry export's paging: the rows the table holds, read no further than the newest sample. */
import { afterEach, expect, test } from 'bun:test';
import type { Database } from 'bun:sqlite';
import { SampleHistory } from '../src/telemetry/history.ts';
import type { SampleRow } from '../src/telemetry/model.ts';
import { INSTALLATION, OTHER_INSTALLATION, startTestService, type TestService } from './support.ts';

const UTC = 1_764_090_000;

let service: TestService;
afterEach(() => service.close());

async function postSamples(installationId: string, utcs: number[]) {
  const samples = utcs.map((utc) => ({ utc, soc: utc % 100 }));
  const response = await service.request('POST', '/v1/telemetry', { body: { installationId, samples } });
  expect(response.status).toBe(200);
}

/** The database, with the upper `utc` bound of every page read recorded. */
function recordingBounds(db: Database): { db: Database; bounds: number[] } {
  const bounds: number[] = [];
  const query = (sql: string) => {
    const statement = db.query(sql);
    if (!sql.includes('utc <= ?')) return statement;
    return {
      values: (...args: number[]) => {
        bounds.push(args[2]!);
        return statement.values(...args);
      },
    };
  };
  return { db: new Proxy(db, { get: (target, key) => (key === 'query' ? query : Reflect.get(target, key)) }), bounds };
}

/** The rows straight from the table, oldest first. */
const storedUtcs = (db: Database, installationId: string, from: number, to: number) =>
  db
    .query<{ utc: number }, [string, number, number]>(
      `SELECT utc FROM samples JOIN installations ON installations.id = installation
       WHERE uuid = ? AND utc BETWEEN ? AND ? ORDER BY utc`,
    )
    .all(installationId, from, to)
    .map((row) => row.utc);

test('an installation that stopped before another: its pages hold its rows and stop at its newest utc', async () => {
  service = await startTestService();
  await postSamples(INSTALLATION, [UTC, UTC + 1, UTC + 2, UTC + 3, UTC + 4]);
  await postSamples(OTHER_INSTALLATION, [UTC + 2, UTC + 10, UTC + 11, UTC + 12]);
  const { db, bounds } = recordingBounds(service.storage.db);
  const history = new SampleHistory(db);

  const utcs = (range: { from?: number; to?: number }) =>
    [...history.pages(INSTALLATION, range, 2)].map((page) => page.map((row) => row[0]));
  expect(utcs({})).toEqual([[UTC, UTC + 1], [UTC + 2, UTC + 3], [UTC + 4]]);
  expect(utcs({}).flat()).toEqual(storedUtcs(service.storage.db, INSTALLATION, 0, UTC + 100));
  expect(utcs({ from: UTC + 1, to: UTC + 3 })).toEqual([[UTC + 1, UTC + 2], [UTC + 3]]);
  expect(utcs({ to: UTC + 100 }).flat()).toEqual([UTC, UTC + 1, UTC + 2, UTC + 3, UTC + 4]);
  expect(Math.max(...bounds)).toBe(UTC + 4);
  expect([...history.pages(OTHER_INSTALLATION, {}, 3)].flat().map((row) => row[0])).toEqual([
    UTC + 2,
    UTC + 10,
    UTC + 11,
    UTC + 12,
  ]);
});

test('samples stored while an export is read are in its later pages', async () => {
  service = await startTestService();
  await postSamples(INSTALLATION, [UTC, UTC + 1]);
  const pages = new SampleHistory(service.storage.db).pages(INSTALLATION, {}, 2);
  const nextUtcs = () => (pages.next().value ?? []).map((row: SampleRow) => row[0]);
  expect(nextUtcs()).toEqual([UTC, UTC + 1]);
  await postSamples(INSTALLATION, [UTC + 5]);
  expect(nextUtcs()).toEqual([UTC + 5]);
  expect(pages.next().done).toBe(true);
});
