/** The commit metrics move by exactly the writes a test drives, group by group. */
import { expect, test } from 'bun:test';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { consumptionChunk, overSocket, tempDir, testConfig } from './support.ts';

const SERIES = [
  'ev_ingest_commit_groups_total',
  'ev_ingest_commit_group_writes_count',
  'ev_ingest_commit_group_writes_sum',
];

/** Groups committed, and the count and sum of the writes-per-group histogram, once the writer is idle. */
async function commitSeries(running: Running): Promise<number[]> {
  await running.storage.committer.idle();
  const text = await (await fetch(running.metricsUrl!)).text();
  return SERIES.map((name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)![1]));
}

async function withServer(run: (running: Running) => Promise<void>): Promise<void> {
  const config = testConfig(tempDir(), { metricsListen: { host: '127.0.0.1', port: 0 } });
  const running = await serve(config, createMemoryLogger());
  try {
    await run(running);
  } finally {
    await running.stop();
  }
}

const putChunk = (running: Running, recordedAt: number) =>
  overSocket(running).request('PUT', '/v1/consumption/daily', { body: consumptionChunk({ recordedAt }) });

test('three chunks stored one after the other: three groups of one write each', async () => {
  await withServer(async (running) => {
    const before = await commitSeries(running);
    for (let i = 0; i < 3; i++) expect((await putChunk(running, 1_764_080_000_123 + i)).status).toBe(204);
    const after = await commitSeries(running);
    expect(after.map((value, i) => value - before[i]!)).toEqual([3, 3, 3]);
  });
});

test('four chunks at once: their groups, however formed, hold the four writes', async () => {
  await withServer(async (running) => {
    const before = await commitSeries(running);
    const puts = [0, 1, 2, 3].map((i) => putChunk(running, 1_764_080_000_200 + i));
    expect((await Promise.all(puts)).map(({ status }) => status)).toEqual([204, 204, 204, 204]);
    const [groups, count, sum] = (await commitSeries(running)).map((value, i) => value - before[i]!);
    expect(count).toBe(groups!);
    expect(groups).toBeGreaterThanOrEqual(1);
    expect(sum).toBe(4);
  });
});
