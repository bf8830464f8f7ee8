/**
 * The owner's device endpoints, authenticated with the approval password and under its lockout.
 * Registered only when APPROVAL_PASSWORD is set.
 */
import { Elysia } from 'elysia';
import { bearerToken, type Authenticator } from '../http/auth.ts';
import { clientAddress, type PeerOf } from '../http/client-address.ts';
import { handlerReadsBody } from '../http/body.ts';
import { messages, notFound, tooManyRequests, unauthorized } from '../http/errors.ts';
import type { Logger } from '../log.ts';
import type { ApprovalLock } from '../pairing/lockout.ts';
import type { DeviceRegistry } from './service.ts';
import { deviceView } from './view.ts';

export interface DeviceRouteDeps {
  devices: DeviceRegistry;
  lock: ApprovalLock;
  /** Tells the tokens cars hold, which are refused here without counting as wrong passwords. */
  auth: Pick<Authenticator, 'knows'>;
  trustProxy: boolean;
  /** The socket's peer lookup of a listening server (`SocketPeers`); else named peers only. */
  peerOf?: PeerOf;
  log: Logger;
}

export function deviceRoutes({ devices, lock, auth, trustProxy, peerOf, log }: DeviceRouteDeps) {
  /**
   * During a lockout nothing is checked; otherwise every wrong password counts, but none presented and
   * a car's token (the ingest token or a paired car's, sent here by a mistaken app) guess nothing.
   */
  const assertOwner = (request: Request) => {
    const who = { address: clientAddress(request, trustProxy, peerOf) };
    const seconds = lock.retryAfterSeconds(who);
    if (seconds > 0) throw tooManyRequests(messages.tooManyWrongPasswords, { 'Retry-After': String(seconds) });
    const candidate = bearerToken(request.headers.get('authorization'));
    if (candidate !== null && auth.knows(candidate)) throw unauthorized();
    // 'locked' cannot come back (nothing awaited since the check above); it would be refused as wrong.
    if (lock.check(candidate, who) !== 'right') throw unauthorized();
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
