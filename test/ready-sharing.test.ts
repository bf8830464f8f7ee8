/** `/v1/ready` probed many times a second: one round trip to the writer thread stands for every check for a second. */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { limits } from '../src/limits.ts';
import { answer, startTestService, type TestService } from './support.ts';

let service: TestService;
let pings = 0;
beforeAll(async () => {
  service = await startTestService();
  const { committer } = service.storage;
  const ping = committer.ping.bind(committer);
  committer.ping = () => {
    pings += 1;
    return ping();
  };
});
afterAll(() => service.close());

const ready = async () => answer(await service.request('GET', '/v1/ready', { token: null }));
const READY = { status: 200, body: { status: 'ready' } };

test('twenty checks at once share one ping; checks within the second reuse it; a later one pings again', async () => {
  const began = performance.now();
  expect(await Promise.all(Array.from({ length: 20 }, ready))).toEqual(Array(20).fill(READY));
  expect(pings).toBe(1);
  expect(await ready()).toEqual(READY);
  expect(pings).toBe(performance.now() - began < limits.readyPingReuseMs ? 1 : 2);
  await Bun.sleep(limits.readyPingReuseMs - (performance.now() - began) + 10);
  expect(await ready()).toEqual(READY);
  expect(await ready()).toEqual(READY);
  expect(pings).toBe(2);
});
