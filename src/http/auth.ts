/** Who is calling: the owner's shared token, or a paired car bound to one installation. */
import { timingSafeEqual } from 'node:crypto';
import type { DeviceRegistry } from '../devices/registry.ts';
import { tokenDigest } from '../devices/token.ts';
import { forbidden, messages, unauthorized } from './errors.ts';

export type DeviceCaller = { kind: 'device'; deviceId: string; installationId: string };
export type Caller = { kind: 'owner' } | DeviceCaller;

const OWNER: Caller = { kind: 'owner' };

/**
 * The token of an `Authorization: Bearer <token>` header, or null for anything else. The seed names the
 * scheme exactly (`Bearer `, one space), though RFC 9110 would take it in any case.
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
    return this.deviceOf(digest);
  }

  /** The paired device a bare token (no `Bearer`) belongs to, or a 401: the owner's token names no installation. */
  authenticateDevice(token: string): DeviceCaller {
    return this.deviceOf(tokenDigest(token));
  }

  private deviceOf(digest: Buffer): DeviceCaller {
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
