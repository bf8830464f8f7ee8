/** Who is calling: the owner's shared token, or a paired car bound to one installation. */
import { timingSafeEqual } from 'node:crypto';
import type { DeviceRegistry } from '../devices/service.ts';
import { tokenDigest } from '../devices/token.ts';
import type { AddressOf } from './client-address.ts';
import { forbidden, messages, unauthorized } from './errors.ts';
import type { Logger } from '../log.ts';
import type { RepeatCounter } from './security-log.ts';

export type DeviceCaller = { kind: 'device'; deviceId: string; installationId: string };
export type Caller = { kind: 'owner' } | DeviceCaller;

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

/** Where the tokens no one holds are logged (`auth.bad_token`), by client address. */
export interface BadTokens {
  repeats: RepeatCounter;
  addressOf: AddressOf;
  log: Logger;
}

export class Authenticator {
  private readonly ownerDigest: Buffer;

  constructor(
    ingestToken: string,
    private readonly devices: DeviceRegistry,
    private readonly badTokens?: BadTokens,
  ) {
    this.ownerDigest = tokenDigest(ingestToken);
  }

  /** The caller of a request, or a 401 error; a token no one holds is logged by the `request`'s address. */
  authenticate(authorization: string | null, request?: Request): Caller {
    const token = bearerToken(authorization);
    if (token === null) throw unauthorized();
    // Comparing digests keeps the comparison constant-time whatever the presented token's length.
    const digest = tokenDigest(token);
    if (timingSafeEqual(digest, this.ownerDigest)) return OWNER;
    return this.deviceOf(digest, request);
  }

  /**
   * The paired device a bare token (no `Bearer`) belongs to, or a 401: the owner's token names no installation.
   * A token no one holds is logged by the `request`'s address, as `authenticate` does.
   */
  authenticateDevice(token: string, request: Request): DeviceCaller {
    return this.deviceOf(tokenDigest(token), request);
  }

  /** Whether a token is the ingest token or a paired car's: never a password guess. */
  knows(token: string): boolean {
    const digest = tokenDigest(token);
    return timingSafeEqual(digest, this.ownerDigest) || this.devices.find(digest.toString('hex')) !== undefined;
  }

  private deviceOf(digest: Buffer, request?: Request): DeviceCaller {
    const device = this.devices.find(digest.toString('hex'));
    if (!device) {
      if (request && this.badTokens) this.logBadToken(request, this.badTokens);
      throw unauthorized();
    }
    this.devices.seen(device);
    return { kind: 'device', deviceId: device.id, installationId: device.installationId };
  }

  private logBadToken(request: Request, { repeats, addressOf, log }: BadTokens): void {
    const address = addressOf(request);
    const count = repeats.due(address);
    if (count !== null) log.warn('auth.bad_token', { address, count });
  }
}

/** A paired car may only touch its own installation, the owner's token any; reads refuse in words of their own. */
export function assertMayUse(caller: Caller, installationId: string, message: string = messages.otherInstallation) {
  if (caller.kind === 'device' && caller.installationId !== installationId.toLowerCase()) {
    throw forbidden(message);
  }
}
