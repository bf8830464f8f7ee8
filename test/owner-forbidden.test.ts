/** A paired car's token on another installation: reads refuse in their own words, uploads in the ingest's. */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { answer, INSTALLATION, OTHER_INSTALLATION, startTestService, type TestService } from './support.ts';

const READ_REFUSED = {
  status: 403,
  body: { error: 'token belongs to another installation; pair this car again after its installation id changed' },
};

let service: TestService;
let token: string;
beforeAll(async () => {
  service = await startTestService();
  token = (await service.devices.pair(OTHER_INSTALLATION, null)).token;
});
afterAll(() => service.close());

test.each([
  `/v1/telemetry/latest/${INSTALLATION}`,
  `/v1/telemetry/export/${INSTALLATION}`,
  `/v1/consumption/history/${INSTALLATION}`,
  `/v1/consumption/export/${INSTALLATION}`,
  `/v1/planner/status/${INSTALLATION}`,
  `/v1/charging-sessions?installationId=${INSTALLATION}`,
  `/v1/charging-sessions/s1?installationId=${INSTALLATION}`,
])('GET %s: 403 for a read', async (path) => {
  expect(await answer(await service.request('GET', path, { token }))).toEqual(READ_REFUSED);
});

test('an upload for another installation keeps the ingest wording', async () => {
  const body = { installationId: INSTALLATION, samples: [{ utc: 1_764_090_000, soc: 50 }] };
  expect(await answer(await service.request('POST', '/v1/telemetry', { body, token }))).toEqual({
    status: 403,
    body: { error: 'token belongs to another installation; pair this car again after its installation id changed' },
  });
});
