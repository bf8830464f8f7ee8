/**
 * `ev-ingest devices list|revoke ID`: device management on DATABASE_PATH without the HTTP side, so a
 * lockout never keeps the owner from revoking a stolen token. A running server sees the revocation
 * within a second (DeviceRegistry.watch).
 */
import { helpOrOption, toStderr, toStdout, usage, withCommandStorage, type Out } from '../command.ts';
import type { Storage } from '../db/storage.ts';
import { listDevices } from './store.ts';
import { deviceView, type DeviceView } from './view.ts';

export const DEVICES_USAGE = `  ev-ingest devices list         list paired devices, newest first: id, installation, name, times
  ev-ingest devices revoke ID    revoke a device's token (exit 0 also when it was already revoked)`;

export async function devicesCommand(
  args: string[],
  out: Out = toStdout,
  err: Out = toStderr,
): Promise<number> {
  const notOperands = helpOrOption(args, DEVICES_USAGE, out, err);
  if (notOperands !== undefined) return notOperands;
  const [action, id, ...rest] = args;
  const valid = (action === 'list' && id === undefined) || (action === 'revoke' && id !== undefined && rest.length === 0);
  if (!valid) {
    return usage(err, DEVICES_USAGE);
  }
  return withCommandStorage(err, (storage) => (action === 'list' ? list(storage, out) : revoke(storage, id!, out, err)));
}

function list(storage: Storage, out: Out): number {
  for (const device of listDevices(storage.db).map(deviceView)) out(`${line(device)}\n`);
  return 0;
}

async function revoke(storage: Storage, id: string, out: Out, err: Out): Promise<number> {
  const at = Date.now();
  const device = await storage.committer.write('revokeDevice', { id, at });
  if (!device) {
    err(`ev-ingest: no device with id ${JSON.stringify(id)}; see "ev-ingest devices list"\n`);
    return 1;
  }
  out(`${device.revokedAt === at ? 'revoked' : 'already revoked'} ${line(deviceView(device))}\n`);
  return 0;
}

/** Full id first, then installation, state, times and the name (quoted: it comes from the car). */
function line(device: DeviceView): string {
  const state = device.revokedAt === null ? 'active' : `revoked=${device.revokedAt}`;
  return [
    device.id,
    `installation=${device.installationId}`,
    state,
    `created=${device.createdAt}`,
    `lastSeen=${device.lastSeenAt ?? 'never'}`,
    `name=${JSON.stringify(device.name ?? '')}`,
  ].join(' ');
}
