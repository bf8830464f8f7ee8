/** The user code of a pairing request: the short code a person types on the approval page. */
import { randomInt } from 'node:crypto';
import { limits } from '../limits.ts';

/** Consonants only: no vowels (no words), no look-alikes of digits (RFC 8628, section 6.1). */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

const USER_CODE = new RegExp(`^[${USER_CODE_ALPHABET}]{${limits.userCodeChars}}$`);

/** A user code in its stored form: 8 letters, no dash. */
export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < limits.userCodeChars; i += 1) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** `WDJBMJHT` → `WDJB-MJHT`, the form shown to people. */
export function displayUserCode(code: string): string {
  const half = limits.userCodeChars / 2;
  return `${code.slice(0, half)}-${code.slice(half)}`;
}

/** What a person typed, in stored form (any case, dash and spaces optional), or null when it cannot be a code. */
export function parseUserCode(input: unknown): string | null {
  if (typeof input !== 'string') return null;
  const code = input.replace(/[\s-]/g, '').toUpperCase();
  return USER_CODE.test(code) ? code : null;
}
