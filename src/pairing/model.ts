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

/** 1..64 characters (code points, so an emoji counts once) of showable text. */
export function deviceName(value: unknown, path: string): string {
  const chars = typeof value === 'string' ? [...value].length : 0;
  if (chars < 1 || chars > limits.deviceNameMaxChars) invalid(path, `must be a string of 1..${limits.deviceNameMaxChars} characters`);
  // SQLite would store a lone surrogate (`"MG4 \ud83d"`) as U+FFFD: the owner would approve a name the car never sent.
  if (!(value as string).isWellFormed()) invalid(path, 'must not hold a lone surrogate');
  if (UNSHOWABLE.test(value as string)) invalid(path, 'must not hold control or text-direction characters');
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
