/** Who is calling: the owner's shared token, or a paired car bound to one installation. */
import { timingSafeEqual } from 'node:crypto';
import type { DeviceRegistry } from '../devices/registry.ts';
import { tokenDigest } from '../devices/token.ts';
import { forbidden, messages, unauthorized } from './errors.ts';

export type Caller = { kind: 'owner' } | { kind: 'device'; deviceId: string; installationId: string };

const OWNER: Caller = { kind: 'owner' };

/**
 * The token of an `Authorization: Bearer <token>` header, or null for anything else. The API fixes
 * the scheme exactly (`Bearer `, one space), though RFC 9110 would take it in any case.
 */
export function bearerToken(header: string | null): string | null {
  if (header === null || !header.startsWith('Bearer ')) return null;
  const token = header.slice('Bearer '.length);
  return token === '' ? null : token;
}

export class Authenticator {
  private readonly ownerDigest: Buffer;

  constructor(
    ingestToken: string,
    private readonly devices: DeviceRegistry,
  ) {
    this.ownerDigest = tokenDigest(ingestToken);
  }

  /** The caller of a request, or a 401 error. */
  authenticate(authorization: string | null): Caller {
    const token = bearerToken(authorization);
    if (token === null) throw unauthorized();
    // Comparing digests keeps the comparison constant-time whatever the presented token's length.
    const digest = tokenDigest(token);
    if (timingSafeEqual(digest, this.ownerDigest)) return OWNER;
    const device = this.devices.find(digest.toString('hex'));
    if (!device) throw unauthorized();
    this.devices.seen(device);
    return { kind: 'device', deviceId: device.id, installationId: device.installationId };
  }
}

/** A paired car may only touch its own installation; the owner's token may touch any. */
export function assertMayUse(caller: Caller, installationId: string): void {
  if (caller.kind === 'device' && caller.installationId !== installationId.toLowerCase()) {
    throw forbidden(messages.otherInstallation);
  }
}
