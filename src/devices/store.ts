/** Devices in the database: read on the main connection, written through the committer. */
import type { Database } from 'bun:sqlite';
import type { WriteOp } from '../db/group.ts';

export interface Device {
  id: string;
  installationId: string;
  name: string | null;
  createdAt: number;
  lastSeenAt: number | null;
  revokedAt: number | null;
}

export interface ActiveDevice {
  id: string;
  installationId: string;
  tokenHash: string;
}

const DEVICE_COLUMNS = `id, installation_id AS installationId, name, created_at AS createdAt,
  last_seen_at AS lastSeenAt, revoked_at AS revokedAt`;

export function activeDevices(db: Database): ActiveDevice[] {
  return db
    .query<ActiveDevice, []>(
      'SELECT id, installation_id AS installationId, token_hash AS tokenHash FROM devices WHERE revoked_at IS NULL',
    )
    .all();
}

/** Moves whenever a device is added, deleted, or its token, installation or revocation changes (not on lastSeen). */
export function currentDevicesVersion(db: Database): number {
  const row = db.query<{ version: number }, []>('SELECT version FROM devices_version').get();
  // Deleted by hand, revocations by other connections would go unseen: say how to mend it instead.
  if (!row) throw new Error('devices_version has lost its row; restore it with INSERT INTO devices_version VALUES (0)');
  return row.version;
}

/** Every device, newest first. */
export function listDevices(db: Database): Device[] {
  return db.query<Device, []>(`SELECT ${DEVICE_COLUMNS} FROM devices ORDER BY created_at DESC, id`).all();
}

function findDevice(db: Database, id: string): Device | null {
  return db.query<Device, [string]>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE id = ?`).get(id);
}

export interface NewDevice {
  id: string;
  installationId: string;
  name: string | null;
  tokenHash: string;
  createdAt: number;
}

/** A device just approved: it awaits the car's collection of its token. */
const insertDevice: WriteOp<NewDevice, void> = (db, device) => {
  db.query(
    `INSERT INTO devices (id, installation_id, name, token_hash, created_at, awaiting_collection)
     VALUES ($id, $installationId, $name, $tokenHash, $createdAt, 1)`,
  ).run({ ...device });
};

/** Device ids are UUIDs, stored lower-case: one given in capitals is the same device. */
export const deviceKey = (id: string) => id.toLowerCase();

/** Sets `revokedAt` unless already set; answers the device, or null when there is none. */
const revokeDevice: WriteOp<{ id: string; at: number }, Device | null> = (db, { id, at }) => {
  const key = deviceKey(id);
  db.query('UPDATE devices SET revoked_at = $at WHERE id = $key AND revoked_at IS NULL').run({ key, at });
  return findDevice(db, key);
};

const touchDevice: WriteOp<{ id: string; at: number }, void> = (db, { id, at }) => {
  db.query('UPDATE devices SET last_seen_at = $at WHERE id = $id').run({ id, at });
};

/**
 * Records that the car has its token, so the device outlives a restart; false when the owner revoked it
 * before the car came for it.
 */
const markCollected: WriteOp<{ id: string }, boolean> = (db, { id }) =>
  db
    .query('UPDATE devices SET awaiting_collection = 0 WHERE id = $id AND revoked_at IS NULL RETURNING id')
    .get({ id }) !== null;

/** An active device whose token its car has not collected yet. */
const UNCOLLECTED = 'awaiting_collection = 1 AND revoked_at IS NULL';

/** Revokes every active device still awaiting its collection; answers their ids. */
const revokeUncollected: WriteOp<{ at: number }, string[]> = (db, { at }) =>
  db
    .query<{ id: string }, { at: number }>(`UPDATE devices SET revoked_at = $at WHERE ${UNCOLLECTED} RETURNING id`)
    .all({ at })
    .map((row) => row.id);

/** The active devices whose car has not collected the token: at start-up, those no car can collect any more. */
export function uncollectedDeviceIds(db: Database): string[] {
  return db
    .query<{ id: string }, []>(`SELECT id FROM devices WHERE ${UNCOLLECTED}`)
    .all()
    .map((row) => row.id);
}

/** A device the owner's command issues: its token is printed at once, so no collection is awaited. */
const issueDevice: WriteOp<NewDevice, void> = (db, device) => {
  insertDevice(db, device);
  markCollected(db, { id: device.id });
};

export const deviceWrites = { insertDevice, issueDevice, revokeDevice, touchDevice, markCollected, revokeUncollected };
