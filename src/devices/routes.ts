/**
 * The owner's device endpoints, authenticated with the approval password and under its lockout.
 * Registered only when APPROVAL_PASSWORD is set.
 */
import { Elysia } from 'elysia';
import { bearerToken } from '../http/auth.ts';
import { handlerReadsBody } from '../http/body.ts';
import { messages, notFound, tooManyRequests, unauthorized } from '../http/errors.ts';
import type { Logger } from '../log.ts';
import type { ApprovalLock } from '../pairing/lock.ts';
import type { DeviceRegistry } from './registry.ts';
import { deviceView } from './view.ts';

export interface DeviceRouteDeps {
  devices: DeviceRegistry;
  lock: ApprovalLock;
  log: Logger;
}

export function deviceRoutes({ devices, lock, log }: DeviceRouteDeps) {
  /** During a lockout nothing is checked; otherwise every wrong password counts (none presented does not). */
  const assertOwner = (request: Request) => {
    const password = lock.check(bearerToken(request.headers.get('authorization')));
    if (password === 'locked') {
      throw tooManyRequests(messages.tooManyWrongPasswords, { 'Retry-After': String(lock.retryAfterSeconds()) });
    }
    if (password === 'wrong') throw unauthorized();
  };

  return new Elysia({ name: 'devices' })
    .get('/v1/devices', ({ request }) => {
      assertOwner(request);
      return { devices: devices.list().map(deviceView) };
    })
    .post(
      '/v1/devices/:id/revoke',
      async ({ request, params }) => {
        assertOwner(request);
        // Elysia gives null for an id whose escapes do not decode (`%ZZ`): no device has it.
        const device = typeof params.id === 'string' ? await devices.revoke(params.id) : null;
        if (!device) throw notFound(messages.deviceNotFound);
        log.info('device.revoked', { device: device.id, by: 'http' });
        return deviceView(device);
      },
      handlerReadsBody,
    );
}
