/** Validation of the car's pairing requests (messages begin with the offending field) and of the owner's decision. */
import { Type } from '@sinclair/typebox';
import { messages } from '../http/errors.ts';
import { errorAnswer, sharedErrors, Uuid, type ApiAnswer, type ApiOperation } from '../http/openapi.ts';
import { limits } from '../limits.ts';
import { compiledParser, invalid, optional, required, uuid, type JsonObject } from '../http/validate.ts';

export interface StartRequest {
  installationId: string;
  name: string | null;
}

/** A start checked field by field: the 400 names the first bad field. */
export function explainStart(body: JsonObject): StartRequest {
  return { installationId: uuid(body.installationId, 'installationId'), name: optional(body.name, 'name', deviceName) };
}

/**
 * Control characters (C0, DEL, C1) and the marks that reorder text: a name from a stranger is shown
 * to the owner at the moment of approval and printed by `ev-ingest devices list`, so it must read as sent.
 */
const UNSHOWABLE = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

/**
 * Characters that show nothing or change how the rest is shown (a zero-width space, a soft hyphen, tag
 * characters, U+3164), and those no font shows as meant (private-use, unassigned and noncharacters, and
 * U+FFFD, which stands for what could not be read): a stranger's name could pass for the owner's car's.
 */
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Co}\p{Cn}\uFFFD]/u;

/**
 * Sequences whose invisible parts show as the character they make: a subdivision flag (🏴 with tag
 * letters and digits, then the cancel tag), a keycap (1️⃣), emoji joined into one
 * (👨‍👩‍👧, 👩🏽‍💻), and a variation selector (VS15 text, VS16 emoji) right after a visible
 * character.
 */
const EMOJI = String.raw`\p{Extended_Pictographic}\p{Emoji_Modifier}?[\uFE0E\uFE0F]?`;
const SHOWN_SEQUENCE = new RegExp(
  [
    String.raw`\u{1F3F4}[\u{E0030}-\u{E0039}\u{E0061}-\u{E007A}]+\u{E007F}`,
    String.raw`[0-9#*]\uFE0F?\u20E3`,
    String.raw`${EMOJI}(?:\u200D${EMOJI})*`,
    String.raw`[^\p{C}\p{Z}\p{M}\p{White_Space}][\uFE0E\uFE0F]`,
  ].join('|'),
  'gu',
);

/** A character that shows something by itself: not a space, a blank (U+2800 braille blank) or a combining mark. */
const VISIBLE = /[^\p{White_Space}\p{Z}\p{M}\u2800]/u;

/** 1..64 characters (code points, so an emoji counts once) of showable text. */
export function deviceName(value: unknown, path: string): string {
  const chars = typeof value === 'string' ? [...value].length : 0;
  if (chars < 1 || chars > limits.deviceNameMaxChars)
    invalid(path, `must be a string of 1..${limits.deviceNameMaxChars} characters`);
  // SQLite would store a lone surrogate (`"MG4 \ud83d"`) as U+FFFD: the owner would approve a name the car never sent.
  if (!(value as string).isWellFormed()) invalid(path, 'must not hold a lone surrogate');
  if (UNSHOWABLE.test(value as string)) invalid(path, 'must not hold control or text-direction characters');
  const shown = (value as string).replace(SHOWN_SEQUENCE, 'x');
  if (INVISIBLE.test(shown)) invalid(path, 'must not hold format, separator or invisible characters');
  if (!VISIBLE.test(shown)) invalid(path, 'must hold a visible character');
  return value as string;
}

export function explainPoll(body: JsonObject): string {
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

const pairingErrors = (fieldMessages: string[]): Record<number, ApiAnswer> => ({
  400: sharedErrors.badRequest(fieldMessages, limits.pairingBodyBytes),
  403: errorAnswer('Sent by a web page of another site (`Sec-Fetch-Site`).', messages.crossSite),
  500: sharedErrors.internal,
});

export const StartSchema = Type.Object({
  installationId: Uuid('The installation asking to pair (a UUID, any case).'),
  name: Type.Optional(
    Type.Union(
      [
        Type.String({ minLength: 1, maxLength: limits.deviceNameMaxChars, description: 'The car’s name.' }),
        Type.Null(),
      ],
      { description: `1..${limits.deviceNameMaxChars} characters of showable text, shown to the owner at approval.` },
    ),
  ),
});

export const PollSchema = Type.Object({
  pairingId: Type.String({ minLength: 1, description: 'The secret `pairingId` of the start.' }),
});

const Status = (status: string, description: string) => Type.Object({ status: Type.Literal(status) }, { description });

export const PollAnswerSchema = Type.Union([
  Status('pending', 'Not decided yet.'),
  Type.Object(
    {
      status: Type.Literal('approved'),
      token: Type.String({ description: 'The car’s own bearer token (43 characters); given once.' }),
      deviceId: Type.String(),
      installationId: Type.String(),
    },
    { description: 'Approved.' },
  ),
  Status('denied', 'Denied, or the device was revoked before its token was collected.'),
  Status('expired', 'Expired, replaced by a new start, unknown, or already collected.'),
]);

/** The car's side of pairing; present only when APPROVAL_PASSWORD is set. */
export const pairingApi: ApiOperation[] = [
  {
    method: 'post',
    path: '/v1/pair/start',
    summary: 'Ask to pair a car',
    description: 'Only with APPROVAL_PASSWORD set. Show `approvalUrl` as a QR code, then poll every `interval` s.',
    security: 'none',
    body: { schema: StartSchema, example: { installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01', name: 'MG4' } },
    answers: {
      200: {
        description: 'The open request.',
        schema: Type.Object({
          pairingId: Type.String({ description: 'A 43-character secret: the poll’s key.' }),
          userCode: Type.String({ pattern: '^[B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4}$' }),
          approvalUrl: Type.String({ description: 'The owner’s approval page for this code.' }),
          expiresIn: Type.Integer({ description: 'Seconds the request lives.' }),
          interval: Type.Integer({ description: 'Seconds between polls.' }),
        }),
        example: {
          pairingId: 'Obl3Jm1nQk0v2yX8fZrT5uW7aB9cD4eG6hK1lM0pQ28',
          userCode: 'NJCT-RVVS',
          approvalUrl: 'https://ev.example.org/pair?code=NJCT-RVVS',
          expiresIn: 600,
          interval: 5,
        },
      },
      ...pairingErrors([
        'installationId is required',
        'installationId must be a UUID',
        `name must be a string of 1..${limits.deviceNameMaxChars} characters`,
        'name must not hold control or text-direction characters',
        'name must not hold a lone surrogate',
        'name must not hold format, separator or invisible characters',
        'name must hold a visible character',
      ]),
      429: errorAnswer(
        `${limits.pairingOpenPerAddress} requests are open from this address, or ${limits.pairingOpenMax} in all.`,
        messages.tooManyPairingRequests,
      ),
    },
  },
  {
    method: 'post',
    path: '/v1/pair/poll',
    summary: 'Poll a pairing request; collect the token once approved',
    description: 'Only with APPROVAL_PASSWORD set.',
    security: 'none',
    body: { schema: PollSchema, example: { pairingId: 'Obl3Jm1nQk0v2yX8fZrT5uW7aB9cD4eG6hK1lM0pQ28' } },
    answers: {
      200: { description: 'Where the request stands.', schema: PollAnswerSchema, example: { status: 'pending' } },
      ...pairingErrors(['pairingId is required', 'pairingId must be a non-empty string']),
    },
  },
];

/** A start the schema accepts; what a name may hold (showable text) is the rule the schema cannot. */
const readStart = (body: JsonObject): StartRequest => ({
  installationId: (body.installationId as string).toLowerCase(),
  name: optional(body.name, 'name', deviceName),
});

export const parseStart = compiledParser(StartSchema, readStart, explainStart);
export const parsePoll = compiledParser(PollSchema, (body) => body.pairingId as string, explainPoll);
