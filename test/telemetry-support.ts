import { afterAll, beforeAll } from 'bun:test';
import type { OutboxChange, SampleForwarder } from '../src/telemetry/outbox.ts';
import type { SampleField } from '../src/telemetry/fields.ts';
import { answer, installationNumbered, startTestService, type TestService } from './support.ts';

/** The fixed server clock: 2025-11-25T14:13:20Z. */
export const NOW_S = 1_764_080_000;
export const NOW_MS = NOW_S * 1000;
export const UTC = NOW_S - 60;

/** Records the hand-off; forwards the installations it is given. */
export function recordingForwarder(forwarded: string[] = []) {
  const stored: string[] = [];
  const changes: OutboxChange[] = [];
  const forwarder: SampleForwarder = {
    forwards: (installationId) => forwarded.includes(installationId),
    stored: (installationId, change) => void (stored.push(installationId), changes.push(change)),
  };
  return { forwarder, stored, changes, forwarded };
}

export let service: TestService;
export let handOff: ReturnType<typeof recordingForwarder>;

export function useTelemetryService(): void {
  beforeAll(async () => {
    handOff = recordingForwarder();
    service = await startTestService({}, { now: () => NOW_MS, forwarder: handOff.forwarder });
  });
  afterAll(() => service.close());
}

/** Each test uses its own installation, so tests never see each other's rows. */
let counter = 0;
export function freshInstallation(): string {
  counter += 1;
  return installationNumbered(counter);
}

export async function post(body: unknown, token?: string | null) {
  return answer(await service.request('POST', '/v1/telemetry', { body, token }));
}

export function rowsOf(installationId: string) {
  return service.storage.db
    .query<Record<string, unknown>, [string]>(
      'SELECT uuid AS installation_id, samples.* FROM samples ' +
        'JOIN installations ON installations.id = installation WHERE uuid = ? ORDER BY utc',
    )
    .all(installationId);
}

/** A usable value of a field: the top of its range, 1 for a flag, a name for text. */
export function usableValue(field: SampleField): number | string {
  if (field.kind === 'number') return field.max;
  return field.kind === 'flag' ? 1 : 'model x';
}

/** Posts one batch of the given samples for a fresh installation. */
export async function postSamples(samples: unknown[]) {
  const installationId = freshInstallation();
  const result = await post({ installationId, samples });
  return { ...result, installationId, rows: rowsOf(installationId) };
}
