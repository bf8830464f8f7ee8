import { describe, expect, test } from 'bun:test';
import { validateBatch } from '../src/telemetry/model.ts';
import { INSTALLATION } from './support.ts';
import {
  NOW_S,
  NOW_MS,
  UTC,
  service,
  useTelemetryService,
  freshInstallation,
  post,
  rowsOf,
  postSamples,
} from './telemetry-support.ts';

useTelemetryService();

describe('dropping values', () => {
  const cases: [string, unknown[], string[], number][] = [
    ['a number of the wrong type', [{ utc: UTC, soc: '71', speed: 5 }], ['samples[0].soc: "71" is not a number'], 1],
    [
      'a value out of range',
      [{}, {}, {}, {}, { utc: UTC + 4, soc: 140, speed: 5 }].map(fill),
      ['samples[4].soc: 140 is out of range 0..100'],
      5,
    ],
    ['an unknown field', [{}, {}, { utc: UTC + 2, foo: 1, speed: 5 }].map(fill), ['samples[2].foo: unknown field'], 3],
    [
      'a flag other than 0, 1, true or false',
      [{ utc: UTC, is_charging: 2, speed: 5 }],
      ['samples[0].is_charging: 2 is not 0, 1, true or false'],
      1,
    ],
    ['text of the wrong type', [{ utc: UTC, car_model: 5, speed: 5 }], ['samples[0].car_model: 5 is not a string'], 1],
    [
      'text of the wrong length',
      [{ utc: UTC, car_model: '', speed: 5 }],
      ['samples[0].car_model: "" is not 1..100 characters long'],
      1,
    ],
    [
      'a lone lat',
      [{}, {}, {}, { utc: UTC + 3, lat: 41.01, speed: 5 }].map(fill),
      ['samples[3].lat: unusable without lon'],
      4,
    ],
    ['a lone lon', [{ utc: UTC, lon: 28.97, speed: 5 }], ['samples[0].lon: unusable without lat'], 1],
    [
      'a lat whose lon is unusable, never quoting either',
      [{ utc: UTC, lat: 41.01, lon: 228.97, speed: 5 }],
      ['samples[0].lat: unusable without lon', 'samples[0].lon: value is out of range -180..180'],
      1,
    ],
    [
      'a lat of the wrong type, not quoted',
      [{ utc: UTC, lat: '41.01', lon: 28.97, speed: 5 }],
      ['samples[0].lat: value is not a number', 'samples[0].lon: unusable without lat'],
      1,
    ],
    [
      'a location inside another value, its coordinates not quoted',
      [{ utc: UTC, soc: { lat: 41.0123, lon: 28.97, at: 1 }, speed: 5 }],
      ['samples[0].soc: {"lat":…,"lon":…,"at":1} is not a number'],
      1,
    ],
    ['text of 100 characters (200 UTF-16 units), kept', [{ utc: UTC, car_model: '🚗'.repeat(100), speed: 5 }], [], 1],
    [
      'text of 101 characters, quoted 40 characters long',
      [{ utc: UTC, car_model: '🚗'.repeat(101), speed: 5 }],
      [`samples[0].car_model: "${'🚗'.repeat(40)}"… is not 1..100 characters long`],
      1,
    ],
    [
      'a string of 41 characters in 82 UTF-16 units, cut',
      [{ utc: UTC, soc: '🚗'.repeat(41), speed: 5 }],
      [`samples[0].soc: "${'🚗'.repeat(40)}"… is not a number`],
      1,
    ],
    [
      'a string of exactly 40 characters, quoted whole; of 41, cut',
      [{ utc: UTC, soc: 'v'.repeat(40), power: 'w'.repeat(41), speed: 5 }],
      [
        `samples[0].soc: "${'v'.repeat(40)}" is not a number`,
        `samples[0].power: "${'w'.repeat(40)}"\u2026 is not a number`,
      ],
      1,
    ],
    [
      'a value whose JSON is exactly 40 characters, quoted whole; of 41, cut',
      [{ utc: UTC, soc: { a: 'x'.repeat(32) }, power: { a: 'y'.repeat(33) }, speed: 5 }],
      [
        `samples[0].soc: {"a":"${'x'.repeat(32)}"} is not a number`,
        `samples[0].power: {"a":"${'y'.repeat(33)}"… is not a number`,
      ],
      1,
    ],
    [
      'an unknown key of exactly 40 characters, shown as .key; of 41, quoted and cut',
      [{ utc: UTC, ['k'.repeat(40)]: 1, ['m'.repeat(41)]: 1, speed: 5 }],
      [`samples[0].${'k'.repeat(40)}: unknown field`, `samples[0]["${'m'.repeat(40)}"…]: unknown field`],
      1,
    ],
    [
      'text with a lone surrogate, which would be stored changed',
      [{ utc: UTC, car_model: '\ud800x', speed: 5 }],
      ['samples[0].car_model: "\\ud800x" is not well-formed text'],
      1,
    ],
    ['a sample that is not an object', [{}, {}, {}, {}, {}, {}, {}, 42].map(fill), ['samples[7]: not an object'], 7],
    ['a null or array sample', [null, [UTC]], ['samples[0]: not an object', 'samples[1]: not an object'], 0],
    ['a sample without utc', [{ soc: 50 }], ['samples[0]: utc is missing'], 0],
    ['a utc of null, as absent', [{ utc: null, soc: 50 }], ['samples[0]: utc is missing'], 0],
    ['a utc of the wrong type', [{ utc: String(UTC), soc: 50 }], [`samples[0]: utc "${UTC}" is not an integer`], 0],
    ['a utc that is not whole', [{ utc: UTC + 0.5, soc: 50 }], [`samples[0]: utc ${UTC + 0.5} is not an integer`], 0],
    ['a utc before 2000', [{ utc: 946_684_799, soc: 50 }], ['samples[0]: utc 946684799 is before 2000-01-01'], 0],
    [
      'a utc in milliseconds',
      [{ utc: 1_764_080_005_000, soc: 50 }],
      ['samples[0]: utc 1764080005000 is in the future (milliseconds instead of seconds?)'],
      0,
    ],
    [
      'a utc in milliseconds of the latest second usable, hinted; one millisecond later, not',
      [
        { utc: (NOW_S + 300) * 1000 + 999, soc: 50 },
        { utc: (NOW_S + 301) * 1000, soc: 50 },
      ],
      [
        `samples[0]: utc ${(NOW_S + 300) * 1000 + 999} is in the future (milliseconds instead of seconds?)`,
        `samples[1]: utc ${(NOW_S + 301) * 1000} is in the future`,
      ],
      0,
    ],
    [
      'a utc in milliseconds of 2000-01-01T00:00:00Z, hinted; one millisecond earlier, not',
      [
        { utc: 946_684_800_000, soc: 50 },
        { utc: 946_684_799_999, soc: 50 },
      ],
      [
        'samples[0]: utc 946684800000 is in the future (milliseconds instead of seconds?)',
        'samples[1]: utc 946684799999 is in the future',
      ],
      0,
    ],
    [
      'a utc far in the future, not milliseconds',
      [{ utc: 99_999_999_999, soc: 50 }],
      ['samples[0]: utc 99999999999 is in the future'],
      0,
    ],
    [
      'a sample with nothing usable',
      [{}, {}, {}, {}, {}, { utc: UTC + 5 }].map(fill),
      ['samples[5]: no usable values'],
      5,
    ],
    [
      'a sample whose only values are unusable',
      [{ utc: UTC, soc: -1, bar: 2 }],
      ['samples[0].soc: -1 is out of range 0..100', 'samples[0].bar: unknown field', 'samples[0]: no usable values'],
      0,
    ],
    [
      'long keys and values, quoted at most 40 characters',
      [{ utc: UTC, ['k'.repeat(50)]: 1, 'a b': 1, car_model: 'c'.repeat(101), soc: { a: 'x'.repeat(60) }, speed: 5 }],
      [
        `samples[0]["${'k'.repeat(40)}"…]: unknown field`,
        'samples[0]["a b"]: unknown field',
        `samples[0].car_model: "${'c'.repeat(40)}"… is not 1..100 characters long`,
        `samples[0].soc: {"a":"${'x'.repeat(34)}… is not a number`,
      ],
      1,
    ],
  ];

  test.each(cases)('%s', async (_name, samples, dropped, stored) => {
    const result = await postSamples(samples);
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ stored, droppedCount: dropped.length, dropped });
    expect(result.rows.length).toBe(stored);
  });

  test('a number past a double’s range (1e400) is quoted as the Infinity it parses to, never as null', async () => {
    const samples = [`{"utc":${UTC},"soc":1e400,"power":[-1e400],"speed":5}`, '{"utc":1e400,"soc":1}'];
    expect(await post(`{"installationId":"${freshInstallation()}","samples":[${samples.join(',')}]}`)).toEqual({
      status: 200,
      body: {
        stored: 1,
        droppedCount: 3,
        dropped: [
          'samples[0].soc: Infinity is out of range 0..100',
          'samples[0].power: [-Infinity] is not a number',
          'samples[1]: utc Infinity is not an integer',
        ],
      },
    });
  });

  test('a value nested 60,000 deep is dropped and quoted by its first 40 characters', async () => {
    // Such values parse, but JSON.stringify takes over a second on them and then throws: quoting must not need it.
    const deep = (open: string, inner: string, close: string) =>
      `${open.repeat(60_000)}${inner}${close.repeat(60_000)}`;
    const arrays = freshInstallation();
    const samples = [`{"utc":${UTC},"soc":${deep('[', '', ']')},"speed":5}`, `{"utc":${deep('[', '', ']')}}`];
    expect(await post(`{"installationId":"${arrays}","samples":[${samples.join(',')}]}`)).toEqual({
      status: 200,
      body: {
        stored: 1,
        droppedCount: 2,
        dropped: [
          `samples[0].soc: ${'['.repeat(40)}… is not a number`,
          `samples[1]: utc ${'['.repeat(40)}… is not an integer`,
        ],
      },
    });
    const objects = freshInstallation();
    const sample = `{"utc":${UTC},"power":${deep('{"":', '1', '}')},"speed":6}`;
    expect(await post(`{"installationId":"${objects}","samples":[${sample}]}`)).toEqual({
      status: 200,
      body: { stored: 1, droppedCount: 1, dropped: [`samples[0].power: ${'{"":'.repeat(10)}… is not a number`] },
    });
    expect(rowsOf(arrays).map((row) => [row.utc, row.speed])).toEqual([[UTC, 5]]);
    expect(rowsOf(objects).map((row) => [row.utc, row.speed])).toEqual([[UTC, 6]]);
  });

  test('text of 1 character (the shortest the contract allows) is stored, not dropped', async () => {
    const result = await postSamples([{ utc: UTC, car_model: 'X' }]);
    expect(result.body).toEqual({ stored: 1, droppedCount: 0, dropped: [] });
    expect(result.rows.map((row) => [row.utc, row.car_model])).toEqual([[UTC, 'X']]);
  });

  test('a dropped value leaves the rest of its sample stored', async () => {
    const result = await postSamples([{ utc: UTC, soc: 140, speed: 5, lat: 41.01 }]);
    expect(result.rows).toEqual([expect.objectContaining({ utc: UTC, soc: null, speed: 5, lat: null })]);
  });

  test('a later sample with the same utc wins; the earlier one is one more drop', async () => {
    const result = await postSamples([
      { utc: UTC, soc: 1 },
      { utc: UTC + 1, soc: 2, foo: 1 },
      { utc: UTC + 2, soc: 3 },
      { utc: UTC + 1, soc: 4 },
    ]);
    expect(result.body).toEqual({
      stored: 3,
      droppedCount: 2,
      dropped: ['samples[1].foo: unknown field', 'samples[1]: a later sample has the same utc'],
    });
    expect(result.rows.map((row) => [row.utc, row.soc])).toEqual([
      [UTC, 1],
      [UTC + 1, 4],
      [UTC + 2, 3],
    ]);
  });

  test('a later sample with the same utc but nothing usable does not replace the earlier one', async () => {
    const result = await postSamples([
      { utc: UTC, soc: 1 },
      { utc: UTC, soc: 500 },
    ]);
    expect(result.body).toEqual({
      stored: 1,
      droppedCount: 2,
      dropped: ['samples[1].soc: 500 is out of range 0..100', 'samples[1]: no usable values'],
    });
    expect(result.rows.map((row) => row.soc)).toEqual([1]);
  });

  test('25 drops are counted and the first 20 listed, in order', async () => {
    const samples = Array.from({ length: 25 }, (_, index) => ({ utc: UTC + index, soc: 200 + index, speed: 1 }));
    const result = await postSamples(samples);
    expect(result.body).toEqual({
      stored: 25,
      droppedCount: 25,
      dropped: Array.from({ length: 20 }, (_, index) => `samples[${index}].soc: ${200 + index} is out of range 0..100`),
    });
  });

  test('utc is usable up to 300 s ahead of the server clock, not one second more', async () => {
    const result = await postSamples([
      { utc: NOW_S + 300, soc: 1 },
      { utc: NOW_S + 301, soc: 2 },
    ]);
    expect(result.body).toEqual({
      stored: 1,
      droppedCount: 1,
      dropped: [`samples[1]: utc ${NOW_S + 301} is in the future`],
    });
    expect(result.rows.map((row) => row.utc)).toEqual([NOW_S + 300]);
  });

  test('utc is usable from 2000-01-01T00:00:00Z', async () => {
    const result = await postSamples([{ utc: 946_684_800, soc: 1 }]);
    expect(result.body).toEqual({ stored: 1, droppedCount: 0, dropped: [] });
  });

  test('one log line with the installation, the count and the first 20 descriptions, no location', async () => {
    const samples = [{ utc: UTC, lat: 41.0123, soc: 140 }, ...Array.from({ length: 24 }, () => 'x')];
    const { installationId } = await postSamples(samples);
    const lines = service.log.lines.filter(
      (line) => line.includes('telemetry.dropped') && line.includes(installationId),
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('count=27');
    expect(lines[0]).toContain('samples[0].lat: unusable without lon');
    expect(lines[0]).toContain('samples[17]: not an object');
    expect(lines[0]).not.toContain('samples[18]');
    expect(lines[0]).not.toContain('41.0123');
  });

  test('an unknown field is counted in the log, never named: its key may be a secret', async () => {
    const key = 'sk-live-0123456789abcdef';
    const { body, installationId } = await postSamples([
      { utc: UTC, soc: 1, [key]: 1, [`${key}-2`]: 2, speed: 'fast' },
    ]);
    expect(body).toMatchObject({ stored: 1, droppedCount: 3 });
    const lines = service.log.lines.filter(
      (line) => line.includes('telemetry.dropped') && line.includes(installationId),
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('count=3');
    expect(lines[0]).toContain('unknownFields=2');
    expect(lines[0]).toContain('samples[0].speed');
    expect(service.log.lines.join('\n')).not.toContain(key);
  });

  test('nothing is logged when nothing was dropped', async () => {
    const { installationId } = await postSamples([{ utc: UTC, soc: 1 }]);
    expect(service.log.lines.filter((line) => line.includes(installationId))).toEqual([]);
  });
});

describe('the validator alone, with a fixed clock', () => {
  test('the future limit follows the clock it is given', () => {
    const body = { installationId: INSTALLATION, samples: [{ utc: NOW_S + 300, soc: 1 }] };
    expect(validateBatch(body, NOW_MS).rows).toHaveLength(1);
    expect(validateBatch(body, NOW_MS - 1000).dropped).toEqual([`samples[0]: utc ${NOW_S + 300} is in the future`]);
  });

  test('rows hold utc then the fields in table order, flags as 0/1', () => {
    const { rows } = validateBatch(
      { installationId: INSTALLATION, samples: [{ is_charging: false, utc: UTC, soc: 3 }] },
      NOW_MS,
    );
    expect(rows[0]!.slice(0, 2)).toEqual([UTC, 3]);
    expect(rows[0]![9]).toBe(0); // is_charging: after soc, soh, power, speed, lat, lon, elevation, heading
  });
});

/** Gives an empty placeholder a usable sample of its own, so only the case's sample drops something. */
function fill(sample: unknown, index: number): unknown {
  if (typeof sample !== 'object' || sample === null) return sample;
  return Object.keys(sample).length === 0 ? { utc: UTC + index, speed: 1 } : sample;
}

describe('the usable range of every number field (the contract table, written out here on purpose)', () => {
  const ranges: [string, number, number][] = [
    ['soc', 0, 100],
    ['soh', 0, 100],
    ['power', -1000, 1000],
    ['speed', 0, 500],
    ['elevation', -500, 9000],
    ['heading', 0, 360],
    ['capacity', 0, 1000],
    ['soe', 0, 1000],
    ['kwh_charged', 0, 1000],
    ['ext_temp', -60, 100],
    ['batt_temp', -60, 100],
    ['cabin_temp', -60, 100],
    ['hvac_power', 0, 100],
    ['hvac_setpoint', 0, 50],
    ['voltage', 0, 2000],
    ['current', -3000, 3000],
    ['odometer', 0, 10_000_000],
    ['est_battery_range', 0, 5000],
    ['tire_pressure_fl', 0, 1000],
    ['tire_pressure_fr', 0, 1000],
    ['tire_pressure_rl', 0, 1000],
    ['tire_pressure_rr', 0, 1000],
  ];
  test.each(ranges)('%s: %d and %d are stored, one past either end is dropped', async (field, min, max) => {
    const other = field === 'speed' ? 'soc' : 'speed'; // keeps each sample usable without the field
    const result = await postSamples([
      { utc: UTC, [other]: 1, [field]: min },
      { utc: UTC + 1, [other]: 1, [field]: max },
      { utc: UTC + 2, [other]: 1, [field]: min - 1 },
      { utc: UTC + 3, [other]: 1, [field]: max + 1 },
    ]);
    expect(result.body).toEqual({
      stored: 4,
      droppedCount: 2,
      dropped: [
        `samples[2].${field}: ${min - 1} is out of range ${min}..${max}`,
        `samples[3].${field}: ${max + 1} is out of range ${min}..${max}`,
      ],
    });
    expect(result.rows.map((row) => row[field])).toEqual([min, max, null, null]);
  });

  test.each(['is_charging', 'is_dcfc', 'is_parked'])('%s takes 0, 1, true and false, stored as 0/1', async (flag) => {
    const result = await postSamples(
      [true, false, 1, 0].map((value, i) => ({ utc: UTC + i, speed: 1, [flag]: value })),
    );
    expect(result.body).toEqual({ stored: 4, droppedCount: 0, dropped: [] });
    expect(result.rows.map((row) => row[flag])).toEqual([1, 0, 1, 0]);
  });
});
