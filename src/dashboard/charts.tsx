/** @jsxImportSource @kitajs/html */
/**
 * Charts as inline SVG, drawn on the server by pure functions: one quantity per chart (so no colour has
 * to tell series apart), axes with ticks, the unit named on the value axis, a title and a description
 * for screen readers, the title shown above it. Colours come from the stylesheet's classes, so dark
 * mode recolours them.
 */
import type { Children } from '@kitajs/html';

/** One bar: its label on the category axis (a date) and its value; null where nothing was recorded. */
export interface Bar {
  label: string;
  value: number | null;
}

/** One point of a line: x in any unit the caller's `xLabel` formats (a time), y in the chart's unit. */
export interface Point {
  x: number;
  y: number;
}

interface ChartText {
  /** Unique within the page: the SVG's title and description are referenced by it. */
  id: string;
  title: string;
  /** The value axis's unit, as written after numbers: `km`, `kWh`, `%`. */
  unit: string;
}

// Text is 16 units high on a phone (the chart ~346 px wide at 412 px: labels of 13 px at least), 12 where wider.
const WIDTH = 400;
const HEIGHT = 230;
const LEFT = 56;
const RIGHT = 10;
const TOP = 26;
const BOTTOM = 40;
/** The height of a recorded zero: a mark on the baseline, where a day without a record has none. */
const ZERO_MARK = 2;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;

/**
 * About `count` round tick values covering [min, max] (steps of 1, 2 or 5 times a power of ten), the
 * first at or below `min` and the last at or above `max`.
 */
export function niceTicks(min: number, max: number, count = 4): number[] {
  if (!(max > min)) {
    const base = Number.isFinite(min) ? min : 0;
    return base === 0 ? [0, 1] : [Math.min(0, base), Math.max(0, base)];
  }
  const raw = (max - min) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  const first = Math.floor(min / step) * step;
  const ticks: number[] = [];
  for (let value = first; value < max + step / 2 && ticks.length < 12; value += step) ticks.push(round(value, step));
  if (ticks[ticks.length - 1]! < max) ticks.push(round(first + ticks.length * step, step));
  return ticks;
}

/** `value` without the float noise of repeated adding, to the step's decimals. */
function round(value: number, step: number): number {
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  return Number(value.toFixed(decimals));
}

/** Formats by the most decimals they write: made once, as a format costs far more to make than to use. */
const numberFormats = new Map<number, Intl.NumberFormat>();

/** A number as an axis or a description writes it: at most `decimals` decimals, thousands grouped. */
export function formatNumber(value: number, decimals = 1): string {
  let format = numberFormats.get(decimals);
  if (format === undefined)
    numberFormats.set(decimals, (format = new Intl.NumberFormat('en-GB', { maximumFractionDigits: decimals })));
  return format.format(value);
}

const scale = (value: number, [low, high]: readonly [number, number], length: number) =>
  high === low ? 0 : ((value - low) / (high - low)) * length;

/** The value axis: ticks as gridlines with their labels, the unit above it. */
function ValueAxis({ ticks, unit }: { ticks: number[]; unit: string }) {
  const range = [ticks[0]!, ticks[ticks.length - 1]!] as const;
  return (
    <g class="axis">
      <text x={LEFT - 6} y={TOP - 9} text-anchor="end" class="unit" safe>
        {unit}
      </text>
      {ticks.map((tick) => {
        const y = (TOP + PLOT_H - scale(tick, range, PLOT_H)).toFixed(1);
        return (
          <g>
            <line x1={LEFT} x2={WIDTH - RIGHT} y1={y} y2={y} class="grid" />
            <text x={LEFT - 6} y={y} dy="0.32em" text-anchor="end" safe>
              {formatNumber(tick, 2)}
            </text>
          </g>
        );
      })}
      <line x1={LEFT} x2={LEFT} y1={TOP} y2={TOP + PLOT_H} class="baseline" />
    </g>
  );
}

/** The category or time axis: its line and labels at given x positions. */
function CategoryAxis({ labels }: { labels: { x: number; text: string }[] }) {
  const y = TOP + PLOT_H;
  return (
    <g class="axis">
      <line x1={LEFT} x2={WIDTH - RIGHT} y1={y} y2={y} class="baseline" />
      {labels.map(({ x, text }, i) => {
        const anchor =
          labels.length > 1 && i === 0 ? 'start' : i === labels.length - 1 && labels.length > 1 ? 'end' : 'middle';
        return (
          <g>
            <line x1={x.toFixed(1)} x2={x.toFixed(1)} y1={y} y2={y + 4} class="baseline" />
            <text x={x.toFixed(1)} y={y + 22} text-anchor={anchor} safe>
              {text}
            </text>
          </g>
        );
      })}
    </g>
  );
}

function Frame({
  id,
  title,
  description,
  children,
}: {
  id: string;
  title: string;
  description: string;
  children: Children;
}) {
  return (
    <figure>
      <figcaption aria-hidden="true" safe>
        {title}
      </figcaption>
      <svg
        class="chart"
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        role="img"
        aria-labelledby={`${id}-title ${id}-desc`}
        xmlns="http://www.w3.org/2000/svg"
      >
        <title id={`${id}-title`} safe>
          {title}
        </title>
        <desc id={`${id}-desc`} safe>
          {description}
        </desc>
        {children}
      </svg>
    </figure>
  );
}

/** Indexes of at most `count` labels spread over `length` items, the first and the last among them. */
export function spreadIndexes(length: number, count = 3): number[] {
  if (length <= count) return Array.from({ length }, (_, i) => i);
  return Array.from({ length: count }, (_, i) => Math.round((i * (length - 1)) / (count - 1)));
}

/**
 * A bar chart of one quantity over categories (days, weeks, months): the first, a middle and the last
 * labelled. A recorded zero is a thin mark on the baseline; a category without a record has no bar.
 */
export function BarChart({ id, title, unit, bars }: ChartText & { bars: Bar[] }): JSX.Element {
  const values = bars.flatMap((bar) => (bar.value === null ? [] : [bar.value]));
  const unrecorded = bars.length - values.length;
  const ticks = niceTicks(Math.min(0, ...values), Math.max(0, ...values));
  const range = [ticks[0]!, ticks[ticks.length - 1]!] as const;
  const slot = PLOT_W / Math.max(1, bars.length);
  const gap = slot > 4 ? slot * 0.2 : 0;
  const zero = TOP + PLOT_H - scale(0, range, PLOT_H);
  const labels = spreadIndexes(bars.length).map((i) => ({ x: LEFT + slot * (i + 0.5), text: bars[i]!.label }));
  const description =
    values.length === 0
      ? 'No values.'
      : `${bars.length} bars from ${bars[0]!.label} to ${bars[bars.length - 1]!.label}; ` +
        `highest ${formatNumber(Math.max(...values))} ${unit}` +
        `${unrecorded > 0 ? `; ${unrecorded} without a record` : ''}. ` +
        'The table beside lists every value.';
  return (
    <Frame id={id} title={title} description={description}>
      <ValueAxis ticks={ticks} unit={unit} />
      <g class="bars">
        {bars.map(({ label, value }, i) => {
          if (value === null) return '';
          const y = TOP + PLOT_H - scale(value, range, PLOT_H);
          const height = Math.max(Math.abs(zero - y), ZERO_MARK);
          const top = value < 0 ? zero : Math.min(y, zero - ZERO_MARK);
          return (
            <rect
              x={(LEFT + slot * i + gap / 2).toFixed(2)}
              y={top.toFixed(2)}
              width={(slot - gap).toFixed(2)}
              height={height.toFixed(2)}
            >
              <title safe>{`${label}: ${formatNumber(value)} ${unit}`}</title>
            </rect>
          );
        })}
      </g>
      <CategoryAxis labels={labels} />
    </Frame>
  );
}

/**
 * A line chart of one quantity over x (a time): a marker on every point when there are few, so a line of
 * one or two points still shows. `yRange` fixes the value axis (0–100 for a percentage).
 */
export function LineChart({
  id,
  title,
  unit,
  points,
  xLabel,
  yRange,
}: ChartText & {
  points: Point[];
  xLabel: (x: number) => string;
  yRange?: readonly [number, number];
}): JSX.Element {
  const ys = points.map((p) => p.y);
  const ticks = yRange
    ? niceTicks(yRange[0], yRange[1])
    : niceTicks(Math.min(...ys, Infinity), Math.max(...ys, -Infinity));
  const yAxis = [ticks[0]!, ticks[ticks.length - 1]!] as const;
  const xs = points.map((p) => p.x);
  const xAxis = [Math.min(...xs), Math.max(...xs)] as const;
  const at = (p: Point) => [LEFT + scale(p.x, xAxis, PLOT_W), TOP + PLOT_H - scale(p.y, yAxis, PLOT_H)] as const;
  const path = points
    .map((p) =>
      at(p)
        .map((v) => v.toFixed(1))
        .join(','),
    )
    .join(' ');
  const labelled = spreadIndexes(points.length).map((i) => points[i]!);
  const labels = labelled.map((p) => ({ x: at(p)[0], text: xLabel(p.x) }));
  const description =
    points.length === 0
      ? 'No values.'
      : `${points.length} points from ${xLabel(xAxis[0])} to ${xLabel(xAxis[1])}; ` +
        `from ${formatNumber(Math.min(...ys))} to ${formatNumber(Math.max(...ys))} ${unit}. ` +
        'The table beside lists the values.';
  return (
    <Frame id={id} title={title} description={description}>
      <ValueAxis ticks={ticks} unit={unit} />
      <polyline class="line" points={path} />
      {points.length <= 40 ? (
        <g class="markers">
          {points.map((p) => (
            <circle cx={at(p)[0].toFixed(1)} cy={at(p)[1].toFixed(1)} r="3" />
          ))}
        </g>
      ) : (
        ''
      )}
      <CategoryAxis labels={labels} />
    </Frame>
  );
}
