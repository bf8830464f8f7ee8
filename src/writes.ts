/** Every write operation the writer knows: each feature's store contributes its own, the db layer knows none. */
import { chargingWrites } from './charging/store.ts';
import { consumptionWrites } from './consumption/store.ts';
import { dashboardWrites } from './dashboard/store.ts';
import { deletionWrites } from './deletion/store.ts';
import { deviceWrites } from './devices/store.ts';
import { knownAddressWrites } from './pairing/known-addresses.ts';
import { plannerWrites } from './planner/store.ts';
import { telemetryWrites } from './telemetry/store.ts';
import type { WriteOp } from './db/group.ts';

export const writeOps = {
  ...deviceWrites,
  ...telemetryWrites,
  ...consumptionWrites,
  ...chargingWrites,
  ...plannerWrites,
  ...dashboardWrites,
  ...deletionWrites,
  ...knownAddressWrites,
} satisfies Record<string, WriteOp>;
