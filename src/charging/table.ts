import { index, integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Finished charging sessions keyed by (installation, sessionId): a repeated PUT replaces. */
export const chargingSessions = sqliteTable(
  'charging_sessions',
  {
    installationId: text('installation_id').notNull(),
    sessionId: text('session_id').notNull(),
    startedAt: integer('started_at').notNull(),
    endedAt: integer('ended_at').notNull(),
    energyKwh: real('energy_kwh').notNull(),
    durationSeconds: real('duration_seconds'),
    meteredSeconds: real('metered_seconds'),
    chargingLossPercent: real('charging_loss_percent'),
    gridEnergyKwh: real('grid_energy_kwh'),
    pricePerKwh: real('price_per_kwh'),
    totalCost: real('total_cost'),
    startSocPercent: real('start_soc_percent'),
    endSocPercent: real('end_soc_percent'),
    lastPower: real('last_power'),
    curveIntervalMs: real('curve_interval_ms'),
    isDemo: integer('is_demo', { mode: 'boolean' }),
    /** The power curve as JSON: `[{"timestampMs", "powerKw", "socPercent"?}]`, null when not sent. */
    curve: text('curve', { mode: 'json' }),
    /** When the server stored the session (Unix ms); null for sessions stored before it was recorded. */
    receivedAt: integer('received_at'),
  },
  (table) => [
    primaryKey({ columns: [table.installationId, table.sessionId] }),
    // The list and the export read an installation's sessions newest first, a page at a time.
    index('charging_sessions_started').on(table.installationId, table.startedAt, table.sessionId),
  ],
);
