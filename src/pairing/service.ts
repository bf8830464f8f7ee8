/**
 * Open pairing requests, in memory only (they do not survive a restart), modelled on the OAuth 2.0
 * device authorization grant (RFC 8628): pending → approving → approved → collected once, or denied, or
 * expired. The devices a restart leaves uncollected are revoked at the next start (`revokeLeftovers`).
 */
import type { DeviceRegistry, PairedDevice } from '../devices/service.ts';
import { NO_PEER } from '../http/client-address.ts';
import { messages, tooManyRequests } from '../http/errors.ts';
import { RepeatCounter } from '../http/security-log.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import { newSecret } from '../secret.ts';
import { newUserCode } from './code.ts';
import type { Decision } from './model.ts';

/** A car's token collection being saved, and why its request was closed meanwhile: the save decides revocation. */
interface Collection {
  closedFor: CloseReason | null;
}

/** An approved request holds its device until the car collects it; `collection` while that is being saved. */
type Approved = { state: 'approved'; device: PairedDevice; collection?: Collection };

/** Where a request stands. `approving`: its device is being committed; the car still sees `pending`. */
type Standing = { state: 'pending' | 'approving' | 'denied' } | Approved;

export interface PairingRequest {
  readonly pairingId: string;
  /** Stored form, without the dash. */
  readonly userCode: string;
  /** Lower-case. */
  readonly installationId: string;
  readonly name: string | null;
  /** The client address it came from (`clientAddress`): it holds one of that address's slots. */
  readonly address: string;
  /** On the monotonic clock (`elapsed`), not a wall-clock time. */
  readonly expiresAt: number;
  /** Replaced as the request moves on; an approved one holds its device until the car collects it. */
  standing: Standing;
}

export type PollAnswer =
  | { status: 'pending' | 'denied' | 'expired' }
  | { status: 'approved'; token: string; deviceId: string; installationId: string };

/** Why a request was closed before its car collected it: a restart closes every request, as they live in memory. */
type CloseReason = 'expired' | 'replaced' | 'restart';

export class PairingBook {
  private readonly byId = new Map<string, PairingRequest>();
  private readonly byCode = new Map<string, PairingRequest>();
  private readonly byInstallation = new Map<string, PairingRequest>();
  private sweeper: Timer | null = null;
  private readonly bookFull: RepeatCounter;
  /** Requests started and approved since the start (the metrics read them). */
  readonly counts = { started: 0, approved: 0 };

  constructor(
    private readonly devices: DeviceRegistry,
    private readonly log: Logger,
    /** A monotonic clock in ms (`AppOptions.elapsed`): lifetimes must not follow the wall clock's jumps. */
    private readonly elapsed: () => number,
    /** Draws a user code; injectable so that tests can make two requests draw the same one. */
    private readonly drawUserCode: () => string = newUserCode,
  ) {
    this.bookFull = new RepeatCounter(elapsed, log, 'pairing.book_full');
  }

  get size(): number {
    return this.byId.size;
  }

  /**
   * Opens a request from a client address, replacing the installation's open one; 429 past the cap of open
   * requests of that address or of all, with `Retry-After` until a slot it may take frees up.
   */
  async start(installationId: string, name: string | null, address: string = NO_PEER): Promise<PairingRequest> {
    // Expired requests are forgotten at once (the caps count live ones); their revocations go on apart,
    // so that a slow commit of another car's never holds up this start.
    void this.sweep();
    const id = installationId.toLowerCase();
    const replaced = this.byInstallation.get(id);
    this.assertSlotFree(address, replaced);
    const request: PairingRequest = {
      pairingId: newSecret(), // the car polls with it; never shown, unlike the user code
      userCode: this.unusedUserCode(),
      installationId: id,
      name,
      address,
      expiresAt: this.elapsed() + limits.pairingTtlMs,
      standing: { state: 'pending' },
    };
    if (replaced) this.forget(replaced);
    this.byId.set(request.pairingId, request);
    this.byCode.set(request.userCode, request);
    this.byInstallation.set(id, request);
    this.log.info('pairing.started', { installation: id });
    this.counts.started += 1;
    if (replaced) await this.close(replaced, 'replaced');
    return request;
  }

  /** The car's poll; an approved request hands out its token once and is gone. */
  async poll(pairingId: string): Promise<PollAnswer> {
    const request = this.byId.get(pairingId);
    if (!request) return { status: 'expired' };
    // Only this request's own expiry: a poll never waits on other cars' requests (the timer sweeps those).
    if (request.expiresAt <= this.elapsed()) {
      await this.close(request, 'expired');
      return { status: 'expired' };
    }
    const { standing } = request;
    if (standing.state === 'denied') return { status: 'denied' };
    if (standing.state !== 'approved' || standing.collection) return { status: 'pending' };
    const { token, id: deviceId, installationId } = standing.device;
    const collected = await this.markCollected(standing);
    this.forget(request);
    // Revoked by the owner after approving (a change of mind): the car learns it is not paired.
    if (!collected) {
      this.log.info('pairing.revoked_before_collection', { installation: installationId, device: deviceId });
      return { status: 'denied' };
    }
    this.log.info('pairing.collected', { installation: installationId, device: deviceId });
    return { status: 'approved', token, deviceId, installationId };
  }

  /** The live request of a user code (stored form), or undefined when unknown or expired. */
  find(userCode: string): PairingRequest | undefined {
    const request = this.byCode.get(userCode);
    return request && request.expiresAt > this.elapsed() ? request : undefined;
  }

  /**
   * Applies the owner's decision to a pending request. Approval commits the device before the car can
   * collect its token; a request that went away meanwhile (replaced, expired) takes its device along.
   */
  async decide(
    request: PairingRequest,
    decision: Decision,
  ): Promise<Exclude<Standing['state'], 'pending'> | 'expired'> {
    if (request.standing.state !== 'pending') return request.standing.state;
    if (decision === 'deny') {
      request.standing = { state: 'denied' };
      this.log.info('pairing.denied', { installation: request.installationId });
      return 'denied';
    }
    request.standing = { state: 'approving' };
    let device: PairedDevice;
    try {
      device = await this.devices.pair(request.installationId, request.name);
    } catch (error) {
      request.standing = { state: 'pending' };
      throw error;
    }
    // Replaced or expired while the device was saved: the car can no longer collect it.
    if (this.byId.get(request.pairingId) !== request || request.expiresAt <= this.elapsed()) {
      this.forget(request);
      await this.revoke(device.id, 'expired');
      return 'expired';
    }
    request.standing = { state: 'approved', device };
    this.log.info('pairing.approved', { installation: request.installationId, device: device.id });
    this.counts.approved += 1;
    return 'approved';
  }

  /** The active paired devices of a request's installation, which the owner should know of before adding one. */
  pairedDevices(request: PairingRequest): number {
    return this.devices.activeCount(request.installationId);
  }

  /** Milliseconds since a request was opened. */
  age(request: PairingRequest): number {
    return Math.max(0, limits.pairingTtlMs - this.timeLeft(request));
  }

  /** Milliseconds left of a request's lifetime. */
  timeLeft(request: PairingRequest): number {
    return Math.max(0, request.expiresAt - this.elapsed());
  }

  /** Drops expired requests; an approved one whose token was never collected revokes its device. */
  async sweep(): Promise<void> {
    const at = this.elapsed();
    const expired = [...this.byId.values()].filter((request) => request.expiresAt <= at);
    await Promise.all(expired.map((request) => this.close(request, 'expired')));
  }

  /** Sweeps on a timer too, so an uncollected token is revoked even when nobody asks. */
  watch(intervalMs: number = limits.pairingSweepIntervalMs): void {
    this.sweeper ??= setInterval(() => void this.sweep(), intervalMs);
    this.sweeper.unref();
  }

  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /**
   * Saves that the car collected its token before the token leaves: a device whose save failed stays
   * uncollected, and the car may poll again. Meanwhile its request neither answers another poll nor is
   * revoked by closing; one closed meanwhile that failed to save takes its device along after all.
   */
  private async markCollected(standing: Approved): Promise<boolean> {
    const collection: Collection = { closedFor: null };
    standing.collection = collection;
    try {
      return await this.devices.markCollected(standing.device.id);
    } catch (error) {
      if (collection.closedFor) await this.revoke(standing.device.id, collection.closedFor);
      throw error;
    } finally {
      delete standing.collection;
    }
  }

  private async close(request: PairingRequest, reason: CloseReason): Promise<void> {
    this.forget(request);
    const { standing } = request;
    if (standing.state !== 'approved') return;
    if (standing.collection)
      standing.collection.closedFor = reason; // its collection's save decides
    else await this.revoke(standing.device.id, reason);
  }

  private async revoke(deviceId: string, reason: CloseReason): Promise<void> {
    try {
      await this.devices.revoke(deviceId);
      logRevoked(this.log, deviceId, reason);
    } catch (error) {
      logRevokeFailed(this.log, deviceId, error);
    }
  }

  /** Drops a request from the maps where it is still the entry (a later request may reuse its code). */
  private forget(request: PairingRequest): void {
    if (this.byId.get(request.pairingId) === request) this.byId.delete(request.pairingId);
    if (this.byCode.get(request.userCode) === request) this.byCode.delete(request.userCode);
    if (this.byInstallation.get(request.installationId) === request) this.byInstallation.delete(request.installationId);
  }

  /**
   * Refuses a request past its address's cap or the book's; one replacing a request reuses that one's slots.
   */
  private assertSlotFree(address: string, replaced: PairingRequest | undefined): void {
    const own = [...this.byId.values()].filter((request) => request.address === address && request !== replaced);
    if (own.length >= limits.pairingOpenPerAddress) throw this.noSlot(own);
    if (replaced || this.byId.size < limits.pairingOpenMax) return;
    const count = this.bookFull.due('');
    if (count !== null) this.log.warn('pairing.book_full', { address, open: this.byId.size, count });
    throw this.noSlot([...this.byId.values()]);
  }

  /** The 429 of a full set of requests, with `Retry-After` until the first of them expires. */
  private noSlot(holding: PairingRequest[]) {
    const firstExpiry = Math.min(...holding.map((request) => request.expiresAt));
    const seconds = Math.max(1, Math.ceil((firstExpiry - this.elapsed()) / 1000));
    return tooManyRequests(messages.tooManyPairingRequests, { 'Retry-After': String(seconds) });
  }

  private unusedUserCode(): string {
    let code = this.drawUserCode();
    while (this.byCode.has(code)) code = this.drawUserCode();
    return code;
  }
}

/**
 * At start-up: a device approved in an earlier run whose token was never collected can never be, its
 * request being lost with the restart; it is revoked, as its request's expiry would have. A failed
 * revocation is logged, not thrown: the service runs on (those tokens never left the server) and the
 * next start tries again. Which devices are left over is read first; a failure of that read refuses the
 * start, as any read at start does (`refusalOf`).
 */
export function revokeLeftovers(devices: DeviceRegistry, log: Logger): Promise<void> {
  const leftovers = devices.uncollected();
  if (leftovers.length === 0) return Promise.resolve();
  return devices.revokeUncollected().then(
    (revoked) => revoked.forEach((device) => logRevoked(log, device, 'restart')),
    (error: unknown) => leftovers.forEach((device) => logRevokeFailed(log, device, error)),
  );
}

function logRevoked(log: Logger, device: string, reason: CloseReason): void {
  log.info('pairing.uncollected_revoked', { device, reason });
}

function logRevokeFailed(log: Logger, device: string, error: unknown): void {
  log.error('pairing.revoke_failed', { device, reason: (error as Error).message });
}
