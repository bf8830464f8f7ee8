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
  // The ping began after `began`, so a check starting within the reuse time of `began` is within its own.
  const at = performance.now();
  expect(await ready()).toEqual(READY);
  if (at - began < limits.readyPingReuseMs) expect(pings).toBe(1);
  await Bun.sleep(Math.max(0, began + limits.readyPingReuseMs + 200 - performance.now()));
  expect(await ready()).toEqual(READY);
  expect(await ready()).toEqual(READY);
  expect(pings).toBe(2);
});
