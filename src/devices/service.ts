/**
 * The paired tokens the server accepts, held in memory by SHA-256 and kept in step with the
 * database: loaded at start-up, and reloaded when the devices' version moves (a device added, revoked
 * or deleted by any connection, the `devices revoke` command among them), not on every commit.
 */
import type { Database } from 'bun:sqlite';
import { monotonicNow } from '../clock.ts';
import type { Committer } from '../db/committer.ts';
import { StorageError } from '../db/open.ts';
import { Poller } from '../db/poll.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import {
  activeDevices,
  currentDevicesVersion,
  deviceKey,
  listDevices,
  uncollectedDeviceIds,
  type ActiveDevice,
  type Device,
  type deviceWrites,
} from './store.ts';
import { newSecret } from '../secret.ts';
import { tokenHash } from './token.ts';

export interface DeviceIdentity {
  id: string;
  installationId: string;
}

/** A device just paired, with the token the car collects once; the token is kept nowhere else. */
export interface PairedDevice extends DeviceIdentity {
  token: string;
}

export class DeviceRegistry {
  private byHash = new Map<string, DeviceIdentity>();
  private lastSeenWritten = new Map<string, number>();
  private devicesVersion = -1;
  private readonly watcher = new Poller(() => this.reloadIfChanged(), limits.deviceReloadCheckMs);

  constructor(
    private readonly db: Database,
    private readonly committer: Committer<typeof deviceWrites>,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    /** A monotonic clock (`AppOptions.elapsed`) for the last-seen throttle: not following the wall clock's jumps. */
    private readonly elapsed: () => number = monotonicNow,
  ) {}

  /** Reads every unrevoked device; a devices table that cannot be read refuses the start. */
  load(): void {
    let version: number;
    let rows: ActiveDevice[];
    try {
      // The version first: a change landing between the two reads is then seen by the next check.
      version = currentDevicesVersion(this.db);
      rows = activeDevices(this.db);
    } catch (error) {
      throw new StorageError(`paired devices cannot be loaded: ${(error as Error).message}`);
    }
    this.byHash = new Map(rows.map((row) => [row.tokenHash, { id: row.id, installationId: row.installationId }]));
    this.devicesVersion = version;
  }

  get size(): number {
    return this.byHash.size;
  }

  /** Every device, revoked ones included, newest first, read from the database. */
  list(): Device[] {
    return listDevices(this.db);
  }

  /** How many unrevoked devices an installation has. */
  activeCount(installationId: string): number {
    let count = 0;
    for (const device of this.byHash.values()) if (device.installationId === installationId) count += 1;
    return count;
  }

  find(tokenHash: string): DeviceIdentity | undefined {
    return this.byHash.get(tokenHash);
  }

  private add(tokenHash: string, device: DeviceIdentity): void {
    this.byHash.set(tokenHash, device);
  }

  private remove(deviceId: string): void {
    for (const [hash, device] of this.byHash) {
      if (device.id === deviceId) this.byHash.delete(hash);
    }
  }

  /** Persists a new device and accepts its token once committed, so a collected token always works. */
  async pair(installationId: string, name: string | null): Promise<PairedDevice> {
    const token = newSecret();
    const hash = tokenHash(token);
    const device = { id: crypto.randomUUID(), installationId: installationId.toLowerCase() };
    await this.committer.write('insertDevice', { ...device, name, tokenHash: hash, createdAt: this.now() });
    this.add(hash, device);
    return { ...device, token };
  }

  /** Revokes a device (idempotent) and stops accepting its token; null when there is no such device. */
  async revoke(deviceId: string): Promise<Device | null> {
    const id = deviceKey(deviceId);
    this.remove(id);
    const device = await this.committer.write('revokeDevice', { id, at: this.now() });
    // Again once committed: a reload while the revocation was under way may have read the row unrevoked.
    this.remove(id);
    // On disk before the answer, even with DURABILITY=fast: a power cut must not bring a stolen token back.
    if (device) await this.committer.flush();
    return device;
  }

  /**
   * Records that the car has collected the device's token; the token must not leave before this commits.
   * False when the device was revoked meanwhile: its token must not leave at all.
   */
  async markCollected(deviceId: string): Promise<boolean> {
    const collected = await this.committer.write('markCollected', { id: deviceId });
    // On disk before the token leaves, even with DURABILITY=fast: a power cut must not unpair a car holding it.
    if (collected) await this.committer.flush();
    return collected;
  }

  /** The ids of the active devices whose car has not collected the token, read now. */
  uncollected(): string[] {
    return uncollectedDeviceIds(this.db);
  }

  /** Revokes every active device whose car has not collected the token and stops accepting those; answers their ids. */
  async revokeUncollected(): Promise<string[]> {
    const revoked = await this.committer.write('revokeUncollected', { at: this.now() });
    for (const id of revoked) this.remove(id);
    // Read again now, with the version this revocation moved, so the watcher need not; a failed read it retries.
    this.tryReading(() => this.load());
    return revoked;
  }

  /** Records that a device was seen; writes `lastSeenAt` at most once a minute, off the request path. */
  seen(device: DeviceIdentity): void {
    const since = this.elapsed();
    if (since - (this.lastSeenWritten.get(device.id) ?? -Infinity) < limits.lastSeenWriteIntervalMs) return;
    this.lastSeenWritten.set(device.id, since);
    this.committer.write('touchDevice', { id: device.id, at: this.now() }).catch((error: Error) => {
      this.log.warn('device.last_seen_failed', { device: device.id, reason: error.message });
    });
  }

  /** Reloads within `limits.deviceReloadCheckMs` of a change to the devices by any connection (CLI revokes too). */
  watch(): void {
    this.watcher.start();
  }

  stop(): void {
    this.watcher.stop();
  }

  /** Runs on the watcher's timer, so it logs a failure instead of throwing it (that would end the process). */
  reloadIfChanged(): void {
    this.tryReading(() => {
      if (currentDevicesVersion(this.db) === this.devicesVersion) return;
      this.load();
      this.log.info('devices.reloaded', { active: this.byHash.size });
    });
  }

  /** Reads the devices, logging a failure instead of throwing it: the watcher's next check reads again. */
  private tryReading(read: () => void): void {
    try {
      read();
    } catch (error) {
      this.log.error('devices.reload_failed', { reason: (error as Error).message });
    }
  }
}
