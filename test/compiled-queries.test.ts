/**
 * The owner's read queries are checked by their compiled TypeBox schemas; a query the schema refuses is
 * explained parameter by parameter, so that every 400 reads as before and every accepted query reads the same.
 */
import { expect, test } from 'bun:test';
import type { TObject } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import fc from 'fast-check';
import { queryValues } from '../src/http/validate.ts';
import {
  ConsumptionExportQuery,
  explainConsumptionExportQuery,
  explainSessionQuery,
  explainSessionsQuery,
  explainTelemetryExportQuery,
  parseConsumptionExportQuery,
  parseSessionQuery,
  parseSessionsQuery,
  parseTelemetryExportQuery,
  SessionQuery,
  SessionsQuery,
  TelemetryExportQuery,
} from '../src/owner/model.ts';
import { INSTALLATION } from './support.ts';

/** What a parser made of a query: its value, or the 400's message. */
function outcome(parse: () => unknown): unknown {
  try {
    return { value: parse() };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** Values a client may send: plausible ones most often, and the strings a loose number parser would take. */
const value = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(INSTALLATION, INSTALLATION.toUpperCase(), 'csv', 'ndjson', 'gpx') },
  { weight: 6, arbitrary: fc.integer({ min: -5, max: 2_000 }).map(String) },
  { weight: 4, arbitrary: fc.constantFrom('1764000000000', '1764090000', '946684800000', '32503679999999') },
  { weight: 2, arbitrary: fc.constantFrom('', '1e3', '0x10', '+5', ' 5', '5.0', '-0', '12345678901234567', 'kml') },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);
const installation = fc.constantFrom(INSTALLATION, INSTALLATION.toUpperCase());
const names = fc.constantFrom('installationId', 'from', 'to', 'limit', 'before', 'format', 'other');
/** Mostly with an installation first, as the routes that need one are mostly sent. */
const query = fc
  .tuple(fc.option(fc.oneof(installation, installation, value), { freq: 5 }), fc.array(fc.tuple(names, value)))
  .map(([installationId, pairs]) => {
    const sent = new URLSearchParams(pairs);
    if (installationId !== null) sent.set('installationId', installationId);
    return sent;
  });

const parsers: [string, TObject, (query: URLSearchParams) => unknown, (query: URLSearchParams) => unknown][] = [
  ['the sessions list', SessionsQuery, parseSessionsQuery, explainSessionsQuery],
  ['one session', SessionQuery, parseSessionQuery, explainSessionQuery],
  ['the telemetry export', TelemetryExportQuery, parseTelemetryExportQuery, explainTelemetryExportQuery],
  ['the consumption export', ConsumptionExportQuery, parseConsumptionExportQuery, explainConsumptionExportQuery],
];

test.each(parsers)('%s: the compiled check answers as the parameter checks, any query', (_, schema, parse, explain) => {
  const runs = { numRuns: 3000, seed: 23 };
  let accepted = 0;
  fc.assert(
    fc.property(query, (sent) => {
      if (Value.Check(schema, queryValues(schema, sent))) accepted += 1;
      expect(outcome(() => parse(sent))).toEqual(outcome(() => explain(sent)));
    }),
    runs,
  );
  expect(accepted).toBeGreaterThan(runs.numRuns / 20);
});

test('strings a loose number parser takes are refused as before', () => {
  for (const from of ['1e3', '0x10', '', ' 5', '+5', '5.0']) {
    const sent = new URLSearchParams({ installationId: INSTALLATION, from });
    expect(outcome(() => parseSessionsQuery(sent))).toEqual({ error: 'from must be an integer' });
  }
});
