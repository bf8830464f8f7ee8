/**
 * `ev-ingest devices list|add|revoke`: device management on DATABASE_PATH without the HTTP side, so a
 * lockout never keeps the owner from revoking a stolen token, and a client without a pairing screen
 * (OVMS, a script) still gets a token. A running server sees the change within a second
 * (DeviceRegistry.watch).
 */
import { helpOrOption, toStderr, toStdout, usage, withCommandStorage, type Out } from './command.ts';
import type { Storage } from '../db/storage.ts';
import { optional, uuid } from '../http/validate.ts';
import { deviceName } from '../pairing/model.ts';
import { newSecret } from '../secret.ts';
import { listDevices } from '../devices/store.ts';
import { tokenHash } from '../devices/token.ts';
import { deviceView, type DeviceView } from '../devices/view.ts';

export const DEVICES_USAGE = `\
  ev-ingest devices list         list paired devices, newest first: id, installation, name, times
  ev-ingest devices add INSTALLATION_ID [--name NAME]
                                 issue a device token for a client without a pairing screen; prints it once
  ev-ingest devices revoke ID    revoke a device's token (exit 0 also when it was already revoked)`;

export async function devicesCommand(args: string[], out: Out = toStdout, err: Out = toStderr): Promise<number> {
  const { operands, name } = nameOption(args);
  if (name === '') return usage(err, DEVICES_USAGE);
  const notOperands = helpOrOption(operands, DEVICES_USAGE, out, err);
  if (notOperands !== undefined) return notOperands;
  const [action, id, ...rest] = operands;
  const takesId = action === 'revoke' || action === 'add';
  const valid = (action === 'list' && id === undefined) || (takesId && id !== undefined && rest.length === 0);
  if (!valid || (name !== null && action !== 'add')) {
    return usage(err, DEVICES_USAGE);
  }
  let device: NewDeviceInput | null = null;
  if (action === 'add') {
    try {
      device = { installationId: uuid(id, 'INSTALLATION_ID'), name: optional(name, '--name', deviceName) };
    } catch (error) {
      err(`ev-ingest: ${(error as Error).message}\n`);
      return 2;
    }
  }
  return withCommandStorage(err, (storage) => {
    if (device) return add(storage, device, out, err);
    return action === 'list' ? list(storage, out) : revoke(storage, id!, out, err);
  });
}

function list(storage: Storage, out: Out): number {
  for (const device of listDevices(storage.db).map(deviceView)) out(`${line(device)}\n`);
  return 0;
}

/** `--name NAME` or `--name=NAME` taken out of the arguments; an empty string when it has no value. */
function nameOption(args: string[]): { operands: string[]; name: string | null } {
  const operands: string[] = [];
  let name: string | null = null;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === '--name') name = args[++index] ?? '';
    else if (arg.startsWith('--name=')) name = arg.slice('--name='.length);
    else operands.push(arg);
  }
  return { operands, name };
}

interface NewDeviceInput {
  installationId: string;
  name: string | null;
}

/** Stores only the token's hash; the token itself is printed once, on a line of its own, last. */
async function add(storage: Storage, { installationId, name }: NewDeviceInput, out: Out, err: Out): Promise<number> {
  const token = newSecret();
  const device = {
    id: crypto.randomUUID(),
    installationId,
    name,
    createdAt: Date.now(),
    lastSeenAt: null,
    revokedAt: null,
  };
  await storage.committer.write('issueDevice', { ...device, tokenHash: tokenHash(token) });
  out(`added ${line(deviceView(device))}\n${token}\n`);
  err('ev-ingest: the token above is shown once and stored only as its hash; give it to the client now\n');
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
