import type { WriteOp } from '../db/group.ts';
import type { ChargingSession } from './model.ts';

/** Inserts the session, or replaces every field of the one stored under the same id. */
const putChargingSession: WriteOp<ChargingSession, void> = (db, session) => {
  db.query(
    `INSERT OR REPLACE INTO charging_sessions (installation_id, session_id, started_at, ended_at, energy_kwh,
       duration_seconds, metered_seconds, charging_loss_percent, grid_energy_kwh, price_per_kwh, total_cost,
       start_soc_percent, end_soc_percent, last_power, curve_interval_ms, is_demo, curve)
     VALUES ($installationId, $sessionId, $startedAt, $endedAt, $energyKwh, $durationSeconds, $meteredSeconds,
       $chargingLossPercent, $gridEnergyKwh, $pricePerKwh, $totalCost, $startSocPercent, $endSocPercent,
       $lastPower, $curveIntervalMs, $isDemo, $curve)`,
  ).run({
    ...session,
    isDemo: session.isDemo === null ? null : Number(session.isDemo),
    curve: session.curve === null ? null : JSON.stringify(session.curve),
  });
};

export const chargingWrites = { putChargingSession };
