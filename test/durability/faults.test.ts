/** The database's disk full, simulated on the writer's connection (PRAGMA max_page_count: root ignores chmod). */
import { expect, test } from 'bun:test';
import {
  answer,
  consumptionChunk,
  countSamples,
  INSTALLATION,
  startTestService,
  type TestService,
} from '../support.ts';

// 1 km each, so the lifetime counts the chunks; spread over twelve days.
const chunk = (index: number) =>
  consumptionChunk({
    recordedAt: 1_764_000_000_000 + index,
    date: `2026-${String(1 + (index % 12)).padStart(2, '0')}-01`,
    day: { km: 1, kwh: 1, hours: 1, socDrop: 1 },
    sohPercent: 97,
  });

/**
 * The drill: one write with room, then the disk filled (the database may grow no more on the writer's
 * connection) and writes 1, 2, … until one is refused: it must be a 500, and the database sound.
 * Answers how many writes were accepted in all, and how to give the room back.
 */
async function fillDiskUntilRefused(service: TestService, ok: number, send: (index: number) => Promise<Response>) {
  expect((await send(0)).status).toBe(ok);
  const { committer } = service.storage;
  const [{ page_count: pages }] = (await committer.writerPragma('page_count')) as [{ page_count: number }];
  const [{ max_page_count: roomy }] = (await committer.writerPragma('max_page_count')) as [{ max_page_count: number }];
  await committer.writerPragma(`max_page_count = ${pages}`);
  let accepted = 1;
  let refused: { status: number; body: unknown } | null = null;
  for (let index = 1; index < 2000 && !refused; index++) {
    const result = await answer(await send(index));
    if (result.status === ok) accepted += 1;
    else refused = result;
  }
  expect(refused).toEqual({ status: 500, body: { error: 'internal server error' } });
  expect(service.storage.db.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
  return { accepted, giveRoomBack: () => committer.writerPragma(`max_page_count = ${roomy}`) };
}

test('disk full: writes answer 500, a log line names it, reads go on, writes recover without a restart', async () => {
  const service = await startTestService();
  try {
    const put = (at: number) => service.request('PUT', '/v1/consumption/daily', { body: chunk(at) });
    const { accepted, giveRoomBack } = await fillDiskUntilRefused(service, 204, put);
    expect(
      service.log.lines.some((line) => line.includes('request.failed') && line.includes('database or disk is full')),
    ).toBe(true);

    const history = await answer(await service.request('GET', `/v1/consumption/history/${INSTALLATION}`));
    expect(history.status).toBe(200);
    expect((history.body as { lifetime: { km: number } }).lifetime.km).toBe(accepted);

    await giveRoomBack();
    expect((await put(5000)).status).toBe(204);
    expect(service.storage.db.query('SELECT count(*) AS n FROM consumption_chunks').get()).toEqual({ n: accepted + 1 });
  } finally {
    await service.close();
  }
});

test('disk full: a telemetry batch is stored whole or not at all, and storing recovers without a restart', async () => {
  const service = await startTestService();
  const start = Math.floor(Date.now() / 1000) - 100_000;
  const batch = (index: number) => ({
    installationId: INSTALLATION,
    samples: Array.from({ length: 20 }, (_, i) => ({
      utc: start + index * 20 + i,
      soc: 50,
      speed: 80,
      lat: 48.1,
      lon: 11.5,
    })),
  });
  try {
    const post = (index: number) => service.request('POST', '/v1/telemetry', { body: batch(index) });
    const { accepted, giveRoomBack } = await fillDiskUntilRefused(service, 200, post);
    expect(countSamples(service, INSTALLATION)).toBe(accepted * 20);

    await giveRoomBack();
    expect((await post(5000)).status).toBe(200);
    expect(countSamples(service, INSTALLATION)).toBe(accepted * 20 + 20);
  } finally {
    await service.close();
  }
});
