import { randomBytes } from 'node:crypto';

/** A bearer secret (a device token, a pairing id): 32 random bytes, base64url without padding, 43 characters. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}
