import { randomBytes } from 'node:crypto';

/** A new device token: 32 random bytes, base64url without padding (43 characters). */
export function newDeviceToken(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 of a token, the only form in which a device token is stored. */
export function tokenDigest(token: string): Buffer {
  return new Bun.CryptoHasher('sha256').update(token).digest() as Buffer;
}

export function tokenHash(token: string): string {
  return tokenDigest(token).toString('hex');
}
