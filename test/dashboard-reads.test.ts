/** The dashboard's sample reads stay cheap behind other installations' samples: they seek, never scan. */
import type { Database } from 'bun:sqlite';
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { SampleHistory } from '../src/telemetry/history.ts';
import { INSTALLATION, OTHER_INSTALLATION, startTestService, type TestService } from './support.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.close());

const UTC = 1_764_090_000;

async function postSamples(installationId: string, samples: Record<string, unknown>[]) {
  const response = await service.request('POST', '/v1/telemetry', { body: { installationId, samples } });
  expect(response.status).toBe(200);
}

/** The database, recording the text of every statement prepared on it. */
function recording(db: Database): { db: Database; statements: string[] } {
  const statements: string[] = [];
  const wrapped = new Proxy(db, {
    get(target, key) {
      if (key === 'query') return (sql: string) => (statements.push(sql), target.query(sql));
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { db: wrapped, statements };
}

/** The query plan's lines for a statement, its parameters bound to 0. */
function planOf(db: Database, sql: string): string[] {
  const statement = db.query(`EXPLAIN QUERY PLAN ${sql}`);
  return statement.all(...Array(statement.paramsCount).fill(0)).map((row) => (row as { detail: string }).detail);
}

test('latest and samplesSince answer right for an idle car behind a busy one, without a scan of samples', async () => {
  await postSamples(OTHER_INSTALLATION, [
    { utc: UTC - 50, soc: 40 },
    { utc: UTC - 10, soc: 41 },
  ]);
  await postSamples(
    INSTALLATION,
    Array.from({ length: 100 }, (_, i) => ({ utc: UTC + i, soc: i % 100 })),
  );
  const { db, statements } = recording(service.storage.db);
  const history = new SampleHistory(db);
  expect(history.latest(OTHER_INSTALLATION)).toMatchObject({ utc: UTC - 10, soc: 41 });
  expect(history.latest(INSTALLATION)).toMatchObject({ utc: UTC + 99, soc: 99 });
  expect(history.samplesSince(UTC - 10)).toEqual(
    new Map([
      [OTHER_INSTALLATION, 1],
      [INSTALLATION, 100],
    ]),
  );
  const readsOfSamples = statements.filter((sql) => /FROM samples/.test(sql));
  expect(readsOfSamples.length).toBeGreaterThan(0);
  for (const sql of readsOfSamples) expect(planOf(db, sql).filter((line) => /^SCAN samples\b/.test(line))).toEqual([]);
});

test('latest after the newest samples were deleted: the newest one left, without the time its batch came', async () => {
  await postSamples(OTHER_INSTALLATION, [{ utc: UTC + 500, soc: 50 }]);
  service.storage.db.run('DELETE FROM samples WHERE utc = ?', [UTC + 500]);
  const latest = new SampleHistory(service.storage.db).latest(OTHER_INSTALLATION);
  expect(latest).toMatchObject({ utc: UTC - 10, soc: 41, receivedAt: null });
});
