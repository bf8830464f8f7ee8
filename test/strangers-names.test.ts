/**
 * Car names that show nothing are refused, however they are made; the sequences whose invisible parts
 * show as one character (keycaps, subdivision flags, emoji joined into one, variation selectors) are not.
 */
import { afterEach, expect, test } from 'bun:test';
import { answer, INSTALLATION } from './support.ts';
import { closeAndCheckLogs, keepSecretsOf, startGuarded } from './strangers-support.ts';
import type { Started } from './pairing-support.ts';

afterEach(closeAndCheckLogs);

const NOTHING = 'name must hold a visible character';
const HIDDEN = 'name must not hold format, separator or invisible characters';
const SCOTLAND = '\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}';

const refused: [string, string, string][] = [
  ['U+2800 braille blank', '\u2800', NOTHING],
  ['braille blanks and spaces', '\u2800 \u2800', NOTHING],
  ['combining marks alone', '\u0301\u0302', NOTHING],
  ['a private-use character', 'MG\uE0004', HIDDEN],
  ['a supplementary private-use character', 'MG\u{10FFFD}4', HIDDEN],
  ['an unassigned code point', 'MG\u03784', HIDDEN],
  ['a noncharacter', 'MG\uFFFE4', HIDDEN],
  ['another noncharacter', 'MG\u{1FFFF}4', HIDDEN],
  ['U+FFFD', 'MG\uFFFD4', HIDDEN],
  ['a variation selector after nothing', '\uFE0FMG4', HIDDEN],
  ['a variation selector after a space', 'MG \uFE0F', HIDDEN],
  ['a joiner between letters', 'MG\u200D4', HIDDEN],
  ['a joiner after an emoji, joining nothing', '\u{1F468}\u200D', HIDDEN],
  [
    'tag characters after the black flag that are not lower-case letters or digits',
    '\u{1F3F4}\u{E0041}\u{E007F}',
    HIDDEN,
  ],
  ['tag characters without the black flag', `MG${SCOTLAND.slice(2)}`, HIDDEN],
];

const accepted: [string, string][] = [
  ['a keycap with VS16', '1\uFE0F\u20E3 family'],
  ['a keycap without it', '#\u20E3'],
  ['a subdivision flag', `${SCOTLAND} Scotland`],
  ['VS16 after a symbol', '\u2708\uFE0F trips'],
  ['VS15 after a symbol', '\u263A\uFE0E'],
  ['VS16 after a letter', 'MG4\uFE0F'],
  ['emoji with a skin tone joined into one', '\u{1F469}\u{1F3FD}\u200D\u{1F4BB}'],
  ['a letter with a combining mark', 'Zoe\u0308'],
];

test.each(refused)('%s is refused', async (_, name, error) => {
  const service = await startGuarded();
  const response = await service.request('POST', '/v1/pair/start', {
    body: { installationId: INSTALLATION, name },
    token: null,
  });
  expect(await answer(response)).toEqual({ status: 400, body: { error } });
});

test.each(accepted)('%s is accepted', async (_, name) => {
  const service = await startGuarded();
  const response = await service.request('POST', '/v1/pair/start', {
    body: { installationId: INSTALLATION, name },
    token: null,
  });
  expect(response.status).toBe(200);
  keepSecretsOf((await response.json()) as Started);
});
