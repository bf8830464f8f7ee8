/** Validation of the car's pairing requests; messages begin with the offending field. */
import { limits } from '../limits.ts';
import { invalid, optional, required, uuid, type JsonObject } from '../http/validate.ts';

export interface StartRequest {
  installationId: string;
  name: string | null;
}

export function parseStart(body: JsonObject): StartRequest {
  return { installationId: uuid(body.installationId, 'installationId'), name: optional(body.name, 'name', deviceName) };
}

/** 1..64 characters (code points, so an emoji counts once). */
function deviceName(value: unknown, path: string): string {
  const chars = typeof value === 'string' ? [...value].length : 0;
  if (chars < 1 || chars > limits.deviceNameMaxChars) invalid(path, `must be a string of 1..${limits.deviceNameMaxChars} characters`);
  return value as string;
}

export function parsePoll(body: JsonObject): string {
  const pairingId = required(body.pairingId, 'pairingId');
  if (typeof pairingId !== 'string' || pairingId === '') invalid('pairingId', 'must be a non-empty string');
  return pairingId;
}
