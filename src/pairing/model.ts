/** Validation of the car's pairing requests; messages begin with the offending field. */
import { badRequest } from '../http/errors.ts';
import { limits } from '../limits.ts';
import { uuid } from '../http/validate.ts';

export interface StartRequest {
  installationId: string;
  name: string | null;
}

export function parseStart(body: Record<string, unknown>): StartRequest {
  const installationId = uuid(body.installationId, 'installationId');
  const name = body.name ?? null;
  if (name !== null && !(typeof name === 'string' && isNameLength([...name].length))) {
    throw badRequest(`name must be a string of 1..${limits.deviceNameMaxChars} characters`);
  }
  return { installationId, name };
}

const isNameLength = (chars: number) => chars >= 1 && chars <= limits.deviceNameMaxChars;

export function parsePoll(body: Record<string, unknown>): string {
  const { pairingId } = body;
  if (typeof pairingId !== 'string' || pairingId === '') throw badRequest('pairingId must be a non-empty string');
  return pairingId;
}
