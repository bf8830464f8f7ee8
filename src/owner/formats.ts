/**
 * The export formats: CSV (RFC 4180, a header row, CRLF), NDJSON (one object a line) and GPX 1.1 (one
 * track), each written a page of rows at a time into a stream that reads the next page only when the
 * client has taken the last one.
 */
import { limits } from '../limits.ts';
import { sampleFieldNames } from '../telemetry/fields.ts';
import type { SampleRow } from '../telemetry/model.ts';

export type Cell = string | number | boolean | null | undefined;

/** A CSV field: empty when absent, quoted when it holds a comma, a quote or a line break (RFC 4180). */
export function csvCell(value: Cell): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') return String(value);
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** A CSV record, CRLF-terminated as RFC 4180 writes it. */
export function csvLine(cells: readonly Cell[]): string {
  let line = csvCell(cells[0]);
  for (let i = 1; i < cells.length; i++) line += `,${csvCell(cells[i])}`;
  return `${line}\r\n`;
}

/** The telemetry CSV's header: `utc`, then the field table's names. */
export const SAMPLE_CSV_HEADER = csvLine(['utc', ...sampleFieldNames]);

/** A sample row as a CSV record: its cells are already in the header's order. */
export const sampleCsvLine = (row: SampleRow): string => csvLine(row);

/** A sample row as the NDJSON object: `utc`, then its stored fields by name. */
export function sampleJson(row: SampleRow): string {
  let json = `{"utc":${row[0]}`;
  for (let i = 0; i < sampleFieldNames.length; i++) {
    const value = row[i + 1];
    if (value !== null && value !== undefined) json += `,"${sampleFieldNames[i]}":${JSON.stringify(value)}`;
  }
  return `${json}}\n`;
}

const LAT = sampleFieldNames.indexOf('lat') + 1;
const LON = sampleFieldNames.indexOf('lon') + 1;
const ELEVATION = sampleFieldNames.indexOf('elevation') + 1;

/** The GPX document up to the first track point; `name` is the track's (an installation id: no markup). */
export function gpxHead(name: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<gpx version="1.1" creator="ev-ingest" xmlns="http://www.topografix.com/GPX/1/1" ' +
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
    'xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd">\n' +
    `<trk><name>${name}</name><trkseg>\n`
  );
}

export const GPX_TAIL = '</trkseg></trk>\n</gpx>\n';

/** A sample as a track point (`ele` before `time`, as GPX orders them); '' for one without a position. */
export function gpxPoint(row: SampleRow): string {
  const lat = row[LAT];
  const lon = row[LON];
  if (lat === null || lat === undefined || lon === null || lon === undefined) return '';
  const elevation = row[ELEVATION];
  const ele = elevation === null || elevation === undefined ? '' : `<ele>${decimal(elevation as number)}</ele>`;
  // GPX takes longitudes below 180 only: 180 is the meridian of -180.
  const east = lon === 180 ? -180 : (lon as number);
  const time = `<time>${gpxTime(row[0] as number)}</time>`;
  return `<trkpt lat="${decimal(lat as number)}" lon="${decimal(east)}">${ele}${time}</trkpt>\n`;
}

/** A number as xsd:decimal, which has no exponent: `1e-7` is written `0.0000001`. */
function decimal(value: number): string {
  const text = String(value);
  return text.includes('e') ? value.toFixed(20).replace(/\.?0+$/, '') : text;
}

/** `utc` seconds as xsd:dateTime in UTC, without the fraction. */
const gpxTime = (utc: number) => `${new Date(utc * 1000).toISOString().slice(0, 19)}Z`;

const encoder = new TextEncoder();

/**
 * Lets the event loop turn before an export's next page (a client reading at full speed would otherwise
 * pull page after page while no other request is answered), and waits longer when other work ran in
 * that turn, `exportYieldFactor` times that work or the export's last page: an export then takes a
 * small share of the thread, and ingest keeps most of it.
 */
async function yieldToRequests(pageMs: number): Promise<void> {
  const asked = performance.now();
  await new Promise((resolve) => setImmediate(resolve));
  const othersMs = performance.now() - asked;
  if (othersMs <= limits.exportBusyMs) return;
  // The longer of the two: a quick turn of many small requests still leaves the export a small share.
  await Bun.sleep(Math.min(Math.max(othersMs, pageMs) * limits.exportYieldFactor, limits.exportYieldMaxMs));
}

/**
 * A byte stream of `head`, then each page of `pages` written by `write`, then `tail`. A page is read
 * only when the client has taken the previous one, so memory holds one page whatever the export's size;
 * a client going away ends the reading.
 */
export function pagedStream<T>(
  head: string,
  pages: Iterator<T[]>,
  write: (row: T) => string,
  tail: string,
): ReadableStream<Uint8Array> {
  let started = false;
  let pageMs = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        await yieldToRequests(pageMs);
        const pageStarted = performance.now();
        let text = started ? '' : head;
        started = true;
        // A page may write nothing (GPX leaves out samples without a position): read on until something is written.
        for (;;) {
          const next = pages.next();
          if (next.done) {
            controller.enqueue(encoder.encode(text + tail));
            return controller.close();
          }
          for (const row of next.value) text += write(row);
          if (text === '') continue;
          controller.enqueue(encoder.encode(text));
          pageMs = performance.now() - pageStarted;
          return;
        }
      },
      cancel() {
        pages.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}
