/** SHA-256 of a token, the only form in which a device token is stored. */
export function tokenDigest(token: string): Buffer {
  return new Bun.CryptoHasher('sha256').update(token).digest() as Buffer;
}

export function tokenHash(token: string): string {
  return tokenDigest(token).toString('hex');
}
