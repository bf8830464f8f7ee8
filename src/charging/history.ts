/**
 * Reading stored charging sessions back, newest `startedAt` first: the list in cursor pages, one
 * session with its curve, and every session of a range a page at a time (the export).
 */
import type { Database } from 'bun:sqlite';
import { getTableColumns } from 'drizzle-orm';
import { isoOrNull } from '../clock.ts';
import { badRequest } from '../http/errors.ts';
import { limits } from '../limits.ts';
import type { ChargingSession, CurvePoint } from './model.ts';
import { chargingSessions } from './table.ts';

/** A range of `startedAt` (Unix ms), both ends included; an absent end is open. */
export interface StartedRange {
  from?: number;
  to?: number;
}

/** A session as stored, without its curve; `receivedAt` is ISO 8601 (null for one stored before it was recorded). */
export type SessionSummary = Omit<ChargingSession, 'curve'> & { receivedAt: string | null };
export type Session = SessionSummary & { curve: CurvePoint[] | null };

export interface SessionPage {
  sessions: SessionSummary[];
  /** The cursor of the next page (`before`), null on the last one. */
  next: string | null;
}

/** Where a page starts: below this (startedAt, sessionId) in the list's order. */
interface Position {
  startedAt: number;
  sessionId: string;
}

/** The table's columns but the curve, in its order, which is the answer's: one list, the table's. */
const summaryColumns = Object.entries(getTableColumns(chargingSessions)).filter(([key]) => key !== 'curve');

/** A session's fields without its curve, in the answer's order (the export's CSV columns). */
export const SUMMARY_FIELDS = summaryColumns.map(([key]) => key as keyof SessionSummary);

const SUMMARY_COLUMNS = summaryColumns.map(([key, column]) => `${column.name} AS ${key}`).join(', ');

type SummaryRow = Omit<SessionSummary, 'isDemo' | 'receivedAt'> & { isDemo: number | null; receivedAt: number | null };

/** `$installationId` in `$from..$to`, below the position `$startedAt`, `$sessionId`, newest first. */
const PAGE = `SELECT ${SUMMARY_COLUMNS} FROM charging_sessions
  WHERE installation_id = $installationId AND started_at BETWEEN $from AND $to
    AND (started_at, session_id) < ($startedAt, $sessionId)
  ORDER BY started_at DESC, session_id DESC LIMIT $limit`;

/** Above every stored position: `startedAt` is at most 3000-01-01, and every id sorts below `~`. */
const TOP: Position = { startedAt: Number.MAX_SAFE_INTEGER, sessionId: '~' };

export class ChargingHistory {
  private readonly page;
  private readonly single;

  constructor(private readonly db: Database) {
    this.page = db.query<SummaryRow, Record<string, string | number>>(PAGE);
    this.single = db.query<SummaryRow & { curve: string | null }, [string, string]>(
      `SELECT ${SUMMARY_COLUMNS}, curve FROM charging_sessions WHERE installation_id = ? AND session_id = ?`,
    );
  }

  /** A page of the installation's sessions in the range, newest first; `before` is the previous page's `next`. */
  list(
    installationId: string,
    { from, to, limit = limits.sessionsPageDefault, before }: StartedRange & { limit?: number; before?: string } = {},
  ): SessionPage {
    const start = before === undefined ? TOP : positionOf(before);
    const rows = this.read(installationId, { from, to }, start, limit + 1);
    const sessions = rows.slice(0, limit).map(summaryOf);
    const next = rows.length > limit ? cursorOf(sessions.at(-1)!) : null;
    return { sessions, next };
  }

  /** Every installation that has stored sessions. */
  installations(): string[] {
    return this.db
      .query<{ id: string }, []>('SELECT DISTINCT installation_id AS id FROM charging_sessions')
      .all()
      .map((row) => row.id);
  }

  /** One session with its curve, or null when the installation has none of that id. */
  one(installationId: string, sessionId: string): Session | null {
    const row = this.single.get(installationId, sessionId);
    if (!row) return null;
    const { curve, ...summary } = row;
    return { ...summaryOf(summary), curve: curve === null ? null : (JSON.parse(curve) as CurvePoint[]) };
  }

  /** Every session of the installation in the range, newest first, a page at a time (no curve). */
  *pages(
    installationId: string,
    range: StartedRange = {},
    pageRows: number = limits.exportPageRows,
  ): Generator<SessionSummary[]> {
    let start = TOP;
    for (;;) {
      const rows = this.read(installationId, range, start, pageRows);
      if (rows.length > 0) yield rows.map(summaryOf);
      if (rows.length < pageRows) return;
      start = rows.at(-1)!;
    }
  }

  private read(installationId: string, { from, to }: StartedRange, start: Position, limit: number): SummaryRow[] {
    return this.page.all({
      installationId,
      from: from ?? 0,
      to: to ?? Number.MAX_SAFE_INTEGER,
      startedAt: start.startedAt,
      sessionId: start.sessionId,
      limit,
    });
  }
}

function summaryOf(row: SummaryRow): SessionSummary {
  return { ...row, isDemo: row.isDemo === null ? null : row.isDemo === 1, receivedAt: isoOrNull(row.receivedAt) };
}

/** The cursor after a session: its position, base64url-encoded, so clients treat it as opaque. */
function cursorOf({ startedAt, sessionId }: Position): string {
  return Buffer.from(`${startedAt}:${sessionId}`).toString('base64url');
}

/** The position a cursor names; a 400 naming `before` for anything `cursorOf` did not make. */
function positionOf(cursor: string): Position {
  const match = /^(\d{1,16}):([A-Za-z0-9._-]+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match || cursorOf({ startedAt: Number(match[1]), sessionId: match[2]! }) !== cursor) {
    throw badRequest('before is not a cursor of this list');
  }
  return { startedAt: Number(match[1]), sessionId: match[2]! };
}
