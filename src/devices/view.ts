import type { Device } from './store.ts';

/** A device as the device endpoints and the command line show it: times as ISO 8601 or null. */
export interface DeviceView {
  id: string;
  installationId: string;
  name: string | null;
  createdAt: string;
  lastSeenAt: string | null;
  revokedAt: string | null;
}

export function deviceView(device: Device): DeviceView {
  return {
    id: device.id,
    installationId: device.installationId,
    name: device.name,
    createdAt: iso(device.createdAt),
    lastSeenAt: device.lastSeenAt === null ? null : iso(device.lastSeenAt),
    revokedAt: device.revokedAt === null ? null : iso(device.revokedAt),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();
