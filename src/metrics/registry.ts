/**
 * Prometheus metrics kept by hand: counters, gauges and histograms, with or without labels, and their
 * text exposition (format 0.0.4). A few dozen lines instead of a library whose default collectors do
 * not work on Bun (oven-sh/bun#17716); the process figures are read by the service itself.
 */

/** A metric that can write itself in the text exposition format. */
export interface Metric {
  render(): string;
}

/** One series of a labelled metric: its label values, in the metric's label order. */
type LabelValues = readonly string[];

function header(name: string, help: string, type: string): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** `{a="x",b="y"}`, or nothing for a series without labels; `extra` is appended (a bucket's `le`). */
function labelText(names: readonly string[], values: LabelValues, extra = ''): string {
  const pairs = names.map((name, i) => `${name}="${escapeLabel(values[i]!)}"`);
  if (extra) pairs.push(extra);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

function numberText(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return Number.isNaN(value) ? 'NaN' : String(value);
}

/** Series by their label values, joined into one key (a label value never holds U+0000). */
class Series<T> {
  readonly byKey = new Map<string, { values: LabelValues; state: T }>();
  constructor(private readonly make: () => T) {}

  get(values: LabelValues): T {
    const key = values.length === 1 ? values[0]! : values.join('\u0000');
    let entry = this.byKey.get(key);
    if (entry === undefined) this.byKey.set(key, (entry = { values, state: this.make() }));
    return entry.state;
  }
}

/** A count that only goes up; without labels it is written even at 0. */
export class Counter implements Metric {
  private readonly series = new Series(() => ({ value: 0 }));

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly string[] = [],
  ) {
    if (labelNames.length === 0) this.series.get([]);
  }

  inc(labels: LabelValues = [], by = 1): void {
    this.series.get(labels).value += by;
  }

  render(): string {
    let text = header(this.name, this.help, 'counter');
    for (const { values, state } of this.series.byKey.values()) {
      text += `${this.name}${labelText(this.labelNames, values)} ${numberText(state.value)}\n`;
    }
    return text;
  }
}

/** A gauge, or a counter that another part keeps, read when scraped: one value, or one a value of its label. */
export class Reading implements Metric {
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly type: 'gauge' | 'counter',
    private readonly read: () => number | ReadonlyMap<string, number>,
    private readonly labelName?: string,
  ) {}

  render(): string {
    const value = this.read();
    let text = header(this.name, this.help, this.type);
    if (typeof value === 'number') return `${text}${this.name} ${numberText(value)}\n`;
    for (const [label, count] of value)
      text += `${this.name}${labelText([this.labelName!], [label])} ${numberText(count)}\n`;
    return text;
  }
}

interface HistogramState {
  /** Observations per bucket (not cumulative; summed when written). */
  counts: number[];
  sum: number;
  count: number;
}

/** Observations counted into buckets by upper bound; cumulative `_bucket` series, `_sum` and `_count`. */
export class Histogram implements Metric {
  private readonly series: Series<HistogramState>;

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly bounds: readonly number[],
    private readonly labelNames: readonly string[] = [],
  ) {
    this.series = new Series(() => ({ counts: new Array(bounds.length + 1).fill(0), sum: 0, count: 0 }));
    if (labelNames.length === 0) this.series.get([]);
  }

  observe(value: number, labels: LabelValues = []): void {
    const state = this.series.get(labels);
    let bucket = 0;
    while (bucket < this.bounds.length && value > this.bounds[bucket]!) bucket++;
    state.counts[bucket]! += 1;
    state.sum += value;
    state.count += 1;
  }

  render(): string {
    let text = header(this.name, this.help, 'histogram');
    for (const { values, state } of this.series.byKey.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += state.counts[i]!;
        text += `${this.name}_bucket${labelText(this.labelNames, values, `le="${numberText(bound)}"`)} ${cumulative}\n`;
      });
      text += `${this.name}_bucket${labelText(this.labelNames, values, 'le="+Inf"')} ${state.count}\n`;
      text += `${this.name}_sum${labelText(this.labelNames, values)} ${numberText(state.sum)}\n`;
      text += `${this.name}_count${labelText(this.labelNames, values)} ${state.count}\n`;
    }
    return text;
  }
}
