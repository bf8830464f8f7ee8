/**
 * The owner's data, back out: which installations the server knows, and the streamed exports. The
 * routes of `/v1` and the dashboard's pages both read through here.
 */
import type { Database } from 'bun:sqlite';
import { SUMMARY_FIELDS, type ChargingHistory, type SessionSummary, type StartedRange } from '../charging/history.ts';
import type { Consumption, ConsumptionDay } from '../consumption/service.ts';
import type { DeviceRegistry } from '../devices/service.ts';
import { SampleHistory, type UtcRange } from '../telemetry/history.ts';
import type { SampleRow } from '../telemetry/model.ts';
import {
  csvLine,
  GPX_TAIL,
  gpxHead,
  gpxPoint,
  pagedStream,
  SAMPLE_CSV_HEADER,
  sampleCsvLine,
  sampleJson,
} from './formats.ts';

/** An installation the server holds anything of: a device, a sample, a chunk or a session. */
export interface InstallationSummary {
  installationId: string;
  /** The names of its active devices. */
  names: string[];
  /** The newest `utc` (seconds) it stored a sample for, null when none. */
  lastSampleUtc: number | null;
}

export type ExportKind = 'telemetry' | 'consumption' | 'sessions';

/** The formats of each export; the first is the default. */
export const exportFormats = {
  telemetry: ['csv', 'ndjson', 'gpx'],
  consumption: ['csv', 'ndjson'],
  sessions: ['csv', 'ndjson'],
} as const satisfies Record<ExportKind, readonly string[]>;

export type ExportFormat = (typeof exportFormats)[ExportKind][number];

export interface Export {
  contentType: string;
  /** The name offered for saving it (`Content-Disposition: attachment`). */
  filename: string;
  body: ReadableStream<Uint8Array>;
}

const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8; header=present',
  ndjson: 'application/x-ndjson',
  gpx: 'application/gpx+xml',
};

export interface OwnerDataSources {
  devices: Pick<DeviceRegistry, 'list'>;
  samples: SampleHistory;
  /** Opens a read connection of its own for one telemetry export (see `exportReader`). */
  samplesReader: () => Database;
  consumption: Consumption;
  sessions: ChargingHistory;
}

/** The installations the server knows, and the exports of each. */
export class OwnerData {
  constructor(private readonly sources: OwnerDataSources) {}

  /** Every installation with a device, a sample, a chunk or a session, by id. */
  installations(): InstallationSummary[] {
    const known = new Map<string, InstallationSummary>();
    const of = (installationId: string) => {
      let summary = known.get(installationId);
      if (!summary) known.set(installationId, (summary = { installationId, names: [], lastSampleUtc: null }));
      return summary;
    };
    for (const device of this.sources.devices.list()) {
      const summary = of(device.installationId);
      if (device.revokedAt === null && device.name !== null) summary.names.push(device.name);
    }
    for (const { installationId, latestUtc } of this.sources.samples.installations())
      of(installationId).lastSampleUtc = latestUtc;
    for (const installationId of this.sources.consumption.installations()) of(installationId);
    for (const installationId of this.sources.sessions.installations()) of(installationId);
    return [...known.values()].sort((a, b) => (a.installationId < b.installationId ? -1 : 1));
  }

  /**
   * An export streamed from the database a page at a time: samples oldest first (`range` in `utc`
   * seconds), consumption days oldest first (every day), sessions newest first (`range` of `startedAt` ms).
   */
  exportStream(
    kind: ExportKind,
    installationId: string,
    format: ExportFormat,
    range: UtcRange | StartedRange = {},
  ): Export {
    const filename = `${kind === 'sessions' ? 'charging-sessions' : kind}-${installationId}.${format}`;
    return { contentType: CONTENT_TYPES[format], filename, body: this.body(kind, installationId, format, range) };
  }

  private body(
    kind: ExportKind,
    installationId: string,
    format: ExportFormat,
    range: UtcRange,
  ): ReadableStream<Uint8Array> {
    switch (kind) {
      case 'telemetry':
        return sampleStream(
          samplePagesOnOwnConnection(this.sources.samplesReader, installationId, range),
          installationId,
          format,
        );
      case 'consumption':
        return dayStream(this.sources.consumption.dayPages(installationId), format);
      case 'sessions':
        return sessionStream(this.sources.sessions.pages(installationId, range), format);
    }
  }
}

/**
 * The samples of an export read on a connection of its own, closed when the export ends or its client
 * goes: a sequential read of millions of rows would otherwise push every hot page out of the shared
 * connection's cache, and grow it to its full size.
 */
function* samplePagesOnOwnConnection(
  open: () => Database,
  installationId: string,
  range: UtcRange,
): Generator<SampleRow[]> {
  const db = open();
  try {
    yield* new SampleHistory(db).pages(installationId, range);
  } finally {
    db.close();
  }
}

function sampleStream(
  pages: Iterator<SampleRow[]>,
  installationId: string,
  format: ExportFormat,
): ReadableStream<Uint8Array> {
  if (format === 'gpx') return pagedStream(gpxHead(installationId), pages, gpxPoint, GPX_TAIL);
  if (format === 'ndjson') return pagedStream('', pages, sampleJson, '');
  return pagedStream(SAMPLE_CSV_HEADER, pages, sampleCsvLine, '');
}

/** The consumption CSV's columns: the day's sums, its state of health, the sums up to it. */
const DAY_CSV_HEADER = csvLine([
  'date',
  'km',
  'kwh',
  'hours',
  'socDrop',
  'sohPercent',
  'lifetimeKm',
  'lifetimeKwh',
  'lifetimeHours',
  'lifetimeSocDrop',
]);

const dayCsvLine = ({ date, day, sohPercent, lifetime }: ConsumptionDay) =>
  csvLine([
    date,
    day.km,
    day.kwh,
    day.hours,
    day.socDrop,
    sohPercent,
    lifetime.km,
    lifetime.kwh,
    lifetime.hours,
    lifetime.socDrop,
  ]);

const jsonLine = (value: unknown) => `${JSON.stringify(value)}\n`;

function dayStream(pages: Iterator<ConsumptionDay[]>, format: ExportFormat): ReadableStream<Uint8Array> {
  return format === 'ndjson'
    ? pagedStream('', pages, jsonLine, '')
    : pagedStream(DAY_CSV_HEADER, pages, dayCsvLine, '');
}

const sessionCsvLine = (session: SessionSummary) => csvLine(SUMMARY_FIELDS.map((column) => session[column]));

function sessionStream(pages: Iterator<SessionSummary[]>, format: ExportFormat): ReadableStream<Uint8Array> {
  return format === 'ndjson'
    ? pagedStream('', pages, jsonLine, '')
    : pagedStream(csvLine(SUMMARY_FIELDS), pages, sessionCsvLine, '');
}
