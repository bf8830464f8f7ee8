/** Validation of the car's pairing requests (messages begin with the offending field) and of the owner's decision. */
import { limits } from '../limits.ts';
import { invalid, optional, required, uuid, type JsonObject } from '../http/validate.ts';

export interface StartRequest {
  installationId: string;
  name: string | null;
}

export function parseStart(body: JsonObject): StartRequest {
  return { installationId: uuid(body.installationId, 'installationId'), name: optional(body.name, 'name', deviceName) };
}

/**
 * Control characters (C0, DEL, C1) and the marks that reorder text: a name from a stranger is shown
 * to the owner at the moment of approval and printed by `ev-ingest devices list`, so it must read as sent.
 */
const UNSHOWABLE = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

/**
 * Characters that show nothing or change how the rest is shown (a zero-width space, a soft hyphen, tag
 * characters, U+3164): a stranger's name could pass for the owner's car's with them.
 */
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;

/** An emoji, or emoji joined into one (👨‍👩‍👧): their joiners and variation selectors show as the emoji made. */
const EMOJI_SEQUENCE = /\p{Extended_Pictographic}\uFE0F?(?:\u200D\p{Extended_Pictographic}\uFE0F?)*/gu;

/** Anything but spaces: a name must show something. */
const VISIBLE = /[^\p{White_Space}\p{Z}]/u;

/** 1..64 characters (code points, so an emoji counts once) of showable text. */
export function deviceName(value: unknown, path: string): string {
  const chars = typeof value === 'string' ? [...value].length : 0;
  if (chars < 1 || chars > limits.deviceNameMaxChars) invalid(path, `must be a string of 1..${limits.deviceNameMaxChars} characters`);
  // SQLite would store a lone surrogate (`"MG4 \ud83d"`) as U+FFFD: the owner would approve a name the car never sent.
  if (!(value as string).isWellFormed()) invalid(path, 'must not hold a lone surrogate');
  if (UNSHOWABLE.test(value as string)) invalid(path, 'must not hold control or text-direction characters');
  if (INVISIBLE.test((value as string).replace(EMOJI_SEQUENCE, 'x'))) {
    invalid(path, 'must not hold format, separator or invisible characters');
  }
  if (!VISIBLE.test(value as string)) invalid(path, 'must hold a visible character');
  return value as string;
}

export function parsePoll(body: JsonObject): string {
  const pairingId = required(body.pairingId, 'pairingId');
  if (typeof pairingId !== 'string' || pairingId === '') invalid('pairingId', 'must be a non-empty string');
  return pairingId;
}

export type Decision = 'approve' | 'deny';

/** The decision of the approval form's button, or null when it names neither. */
export function parseDecision(form: URLSearchParams): Decision | null {
  const decision = form.get('decision');
  return decision === 'approve' || decision === 'deny' ? decision : null;
}
