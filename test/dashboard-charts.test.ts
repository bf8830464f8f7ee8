/** The dashboard's pure pieces: chart drawing, tick choice, the consumption view and the forwarding word. */
import { describe, expect, test } from 'bun:test';
import { BarChart, LineChart, niceTicks, spreadIndexes } from '../src/dashboard/charts.tsx';
import { consumptionView, grouped, summarize } from '../src/dashboard/consumption-view.ts';
import { healthOf } from '../src/dashboard/forwarding.ts';

const values = (svg: string, attribute: string, element: string) =>
  [...svg.matchAll(new RegExp(`<${element} [^>]*?${attribute}="([^"]+)"`, 'g'))].map((m) => Number(m[1]));

/** Whether xmllint reads the SVG as well-formed XML. */
function wellFormed(svg: string): boolean {
  return Bun.spawnSync(['xmllint', '--noout', '-'], { stdin: new TextEncoder().encode(svg) }).exitCode === 0;
}

describe('niceTicks', () => {
  test('round steps of 1, 2 or 5 covering the range', () => {
    expect(niceTicks(0, 60)).toEqual([0, 20, 40, 60]);
    expect(niceTicks(0, 9)).toEqual([0, 5, 10]);
    expect(niceTicks(0, 0.37)).toEqual([0, 0.1, 0.2, 0.3, 0.4]);
    expect(niceTicks(-12, 118)).toEqual([-50, 0, 50, 100, 150]);
    expect(niceTicks(80, 100)).toEqual([80, 85, 90, 95, 100]);
  });
  test('an empty or flat range still has two ticks', () => {
    expect(niceTicks(0, 0)).toEqual([0, 1]);
    expect(niceTicks(Infinity, -Infinity)).toEqual([0, 1]);
    expect(niceTicks(42, 42)).toEqual([0, 42]);
  });
  test('spreadIndexes labels the first, the middle and the last', () => {
    expect(spreadIndexes(30)).toEqual([0, 15, 29]);
    expect(spreadIndexes(2)).toEqual([0, 1]);
    expect(spreadIndexes(0)).toEqual([]);
  });
});

describe('BarChart', () => {
  const bars = [
    { label: '2026-11-23', value: 10 },
    { label: '2026-11-24', value: 0 },
    { label: '2026-11-25', value: 40 },
  ];
  const svg = BarChart({ id: 'km', title: 'Distance <per> day', unit: 'km', bars }) as string;

  test('a bar a value, heights in proportion, on one baseline; a recorded zero is a thin mark', () => {
    const heights = values(svg, 'height', 'rect');
    expect(heights).toEqual([41, 2, 164]);
    const bottoms = values(svg, 'y', 'rect').map((y, i) => y + heights[i]!);
    expect(new Set(bottoms)).toEqual(new Set([190]));
    expect(svg.match(/<title>[^<]+<\/title>/g)).toEqual([
      '<title>2026-11-23: 10 km</title>',
      '<title>2026-11-24: 0 km</title>',
      '<title>2026-11-25: 40 km</title>',
    ]);
  });

  test('titled, described, with the unit and ticks on the value axis and labelled categories; well-formed XML', () => {
    expect(svg).toContain('role="img" aria-labelledby="km-title km-desc"');
    expect(svg).toContain('<title id="km-title">Distance &lt;per&gt; day</title>');
    expect(svg).toContain(
      '<desc id="km-desc">3 bars from 2026-11-23 to 2026-11-25; highest 40 km. ' +
        'The table beside lists every value.</desc>',
    );
    expect(svg).toContain('class="unit">km</text>');
    for (const tick of ['0', '10', '20', '30', '40']) expect(svg).toContain(`text-anchor="end">${tick}</text>`);
    for (const label of ['2026-11-23', '2026-11-24', '2026-11-25']) expect(svg).toContain(`>${label}</text>`);
    expect(wellFormed(svg)).toBe(true);
  });

  test('a category without a record has no bar, and the description counts it', () => {
    const withGap = [bars[0]!, { label: '2026-11-24', value: null }, bars[2]!];
    const gap = BarChart({ id: 'g', title: 'Gap', unit: 'km', bars: withGap }) as string;
    expect(values(gap, 'height', 'rect')).toEqual([41, 164]);
    expect(gap).not.toContain('<title>2026-11-24');
    expect(gap).toContain('highest 40 km; 1 without a record. The table');
  });

  test('no bars: an empty chart that says so', () => {
    const empty = BarChart({ id: 'e', title: 'Nothing', unit: 'kWh', bars: [] }) as string;
    expect(empty).toContain('<desc id="e-desc">No values.</desc>');
    expect(empty).not.toContain('<rect');
    expect(wellFormed(empty)).toBe(true);
  });
});

describe('LineChart', () => {
  test('points in order across the plot, markers when few, the y range as asked', () => {
    const points = [
      { x: 0, y: 0 },
      { x: 50, y: 50 },
      { x: 100, y: 100 },
    ];
    const svg = LineChart({
      id: 'soc',
      title: 'SoC',
      unit: '%',
      points,
      xLabel: (x) => `t${x}`,
      yRange: [0, 100],
    }) as string;
    expect(svg).toContain('<polyline class="line" points="56.0,190.0 223.0,108.0 390.0,26.0">');
    expect(svg.match(/<circle /g)).toHaveLength(3);
    expect(svg).toContain(
      '<desc id="soc-desc">3 points from t0 to t100; from 0 to 100 %. The table beside lists the values.</desc>',
    );
    expect(wellFormed(svg)).toBe(true);
  });
  test('many points: the line alone', () => {
    const points = Array.from({ length: 41 }, (_, x) => ({ x, y: x }));
    const svg = LineChart({ id: 'p', title: 'P', unit: 'kW', points, xLabel: String }) as string;
    expect(svg).not.toContain('<circle');
    expect(
      svg
        .match(/<polyline class="line" points="([^"]*)"/)?.[1]
        ?.trim()
        .split(/\s+/),
    ).toHaveLength(41);
  });
});

describe('consumptionView', () => {
  const day = (date: string, km: number, soh: number | null) => ({
    date,
    day: { km, kwh: km / 5, hours: 1, socDrop: 2 },
    sohPercent: soh,
    lifetime: { km: 1000 + km, kwh: 200, hours: 10, socDrop: 20 },
  });

  test('every day of the period, missing ones zero and not recorded; the last lifetime; the SoH by month', () => {
    const stored = [
      day('2026-09-30', 5, 99),
      day('2026-10-01', 7, 98.5),
      day('2026-10-20', 9, 98),
      day('2026-11-24', 10, null),
      day('2026-11-25', 20, 97.5),
    ];
    const view = consumptionView(summarize(stored), '2026-11-25', 30);
    expect(view.days).toHaveLength(30);
    expect(view.days[0]).toEqual({ label: '2026-10-27', km: 0, kwh: 0, recorded: 0 });
    expect(view.days.slice(-2)).toEqual([
      { label: '2026-11-24', km: 10, kwh: 2, recorded: 1 },
      { label: '2026-11-25', km: 20, kwh: 4, recorded: 1 },
    ]);
    expect(view.lifetime).toEqual({ km: 1020, kwh: 200, hours: 10, socDrop: 20 });
    expect(view.soh).toEqual([
      { month: '2026-09', sohPercent: 99 },
      { month: '2026-10', sohPercent: 98 },
      { month: '2026-11', sohPercent: 97.5 },
    ]);
  });

  test('no days: zeros, no lifetime, no SoH', () => {
    const view = consumptionView(summarize([]), '2026-11-25', 90);
    expect([view.days.length, view.lifetime, view.soh]).toEqual([90, null, []]);
  });

  test('grouped by week from Monday and by month, counting recorded days; a first row begun inside is partial', () => {
    const dates = ['2026-11-22', '2026-11-23', '2026-11-24', '2026-12-01'];
    const days = dates.map((label) => ({ label, km: 10, kwh: 2, recorded: 1 }));
    days[1]!.recorded = 0;
    expect(grouped(days, 'week')).toEqual([
      { label: '2026-11-16', km: 10, kwh: 2, recorded: 1, partFrom: '2026-11-22' },
      { label: '2026-11-23', km: 20, kwh: 4, recorded: 1 },
      { label: '2026-11-30', km: 10, kwh: 2, recorded: 1 },
    ]);
    expect(grouped(days, 'month')).toEqual([
      { label: '2026-11', km: 30, kwh: 6, recorded: 2, partFrom: '2026-11-22' },
      { label: '2026-12', km: 10, kwh: 2, recorded: 1 },
    ]);
    expect(grouped(days.slice(1), 'week')[0]).toEqual({ label: '2026-11-23', km: 20, kwh: 4, recorded: 1 });
  });
});

describe('healthOf', () => {
  const status = {
    forwarding: true,
    waiting: 3,
    sent: 10,
    givenUp: 1,
    lastSentAt: '2026-11-25T11:00:00.000Z',
    lastSentUtc: 1,
    lastFailure: null,
    nextAttemptAt: null,
  };
  test('a word first: Off, OK, or Failing when the last failure is newer than the last send', () => {
    expect(healthOf({ ...status, forwarding: false }).word).toBe('Off');
    expect(healthOf(status)).toEqual({ word: 'OK', tone: 'ok', detail: '3 waiting, 10 sent, 1 given up' });
    const failure = { at: '2026-11-25T11:05:00.000Z', status: null, error: 'ECONNREFUSED', attempt: 2 };
    expect(healthOf({ ...status, lastFailure: failure })).toEqual({
      word: 'Failing',
      tone: 'bad',
      detail: 'ECONNREFUSED; 3 waiting, 10 sent, 1 given up',
    });
    expect(healthOf({ ...status, lastFailure: { ...failure, at: '2026-11-25T10:00:00.000Z' } }).word).toBe('OK');
    expect(
      healthOf({ ...status, lastSentAt: null, lastFailure: { ...failure, status: 401, error: null } }).detail,
    ).toStartWith('HTTP 401;');
  });
});
