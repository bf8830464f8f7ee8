/** Every write operation the writer knows; each feature's store contributes its own. */
import { chargingWrites } from '../charging/store.ts';
import { consumptionWrites } from '../consumption/store.ts';
import { dashboardWrites } from '../dashboard/store.ts';
import { deletionWrites } from '../deletion/store.ts';
import { deviceWrites } from '../devices/store.ts';
import { knownAddressWrites } from '../pairing/known-addresses.ts';
import { plannerWrites } from '../planner/store.ts';
import { telemetryWrites } from '../telemetry/store.ts';
import type { WriteOp } from './group.ts';

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

export type WriteOps = typeof writeOps;
export type WriteName = keyof WriteOps;
export type WriteArgs<K extends WriteName> = Parameters<WriteOps[K]>[1];
export type WriteResult<K extends WriteName> = ReturnType<WriteOps[K]>;
