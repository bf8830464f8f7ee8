/**
 * The owner's device endpoints, authenticated with the approval password and under its lockout.
 * Registered only when APPROVAL_PASSWORD is set.
 */
import { Elysia } from 'elysia';
import { messages, notFound } from '../http/errors.ts';
import type { Pipeline } from '../http/pipeline.ts';
import type { Logger } from '../log.ts';
import type { DeviceRegistry } from './service.ts';
import { deviceView } from './view.ts';

export interface DeviceRouteDeps {
  pipeline: Pipeline;
  devices: DeviceRegistry;
  log: Logger;
}

export function deviceRoutes({ pipeline, devices, log }: DeviceRouteDeps) {
  return new Elysia({ name: 'devices' })
    .use(pipeline)
    .get('/v1/devices', () => ({ devices: devices.list().map(deviceView) }), { auth: 'approval' })
    .post(
      '/v1/devices/:id/revoke',
      async ({ params }) => {
        // Elysia gives null for an id whose escapes do not decode (`%ZZ`): no device has it.
        const device = typeof params.id === 'string' ? await devices.revoke(params.id) : null;
        if (!device) throw notFound(messages.deviceNotFound);
        log.info('device.revoked', { device: device.id, by: 'http' });
        return deviceView(device);
      },
      { auth: 'approval' },
    );
}
