import { getTableColumns } from 'drizzle-orm';
import type { WriteOp } from '../db/group.ts';
import type { ChargingSession } from './model.ts';
import { chargingSessions } from './table.ts';

/** Every column of the table, bound by its schema key (`$energyKwh` → `energy_kwh`): one list, the schema's. */
const columns = Object.entries(getTableColumns(chargingSessions));
const PUT_SESSION = `INSERT OR REPLACE INTO charging_sessions (${columns.map(([, column]) => column.name).join(', ')})
  VALUES (${columns.map(([key]) => `$${key}`).join(', ')})`;

/** A session as written: with the time the server received it (Unix ms). */
export type ReceivedSession = ChargingSession & { receivedAt: number };

/** Inserts the session, or replaces every field of the one stored under the same id. */
const putChargingSession: WriteOp<ReceivedSession, void> = (db, session) => {
  db.query(PUT_SESSION).run({
    ...session,
    isDemo: session.isDemo === null ? null : Number(session.isDemo),
    curve: session.curve === null ? null : JSON.stringify(session.curve),
  });
};

export const chargingWrites = { putChargingSession };
