/** The forwarding status of an installation: the stored facts of its outcomes, and what the running forwarder holds. */
import type { Database } from 'bun:sqlite';
import { isoOrNull } from '../clock.ts';
import type { PlannerForwarder } from './forwarder.ts';
import { plannerStatusReader, type PlannerFailure, type StoredPlannerStatus } from './store.ts';

/** The answer of `GET /v1/planner/status/{installationId}`; times ISO 8601 in UTC. */
export interface ForwardingStatus {
  /** The server holds planner credentials for the installation. */
  forwarding: boolean;
  /** Stored samples waiting for the planner, sent to it, and given up. */
  waiting: number;
  sent: number;
  givenUp: number;
  /** When the planner last accepted a sample, and the newest `utc` it accepted. */
  lastSentAt: string | null;
  lastSentUtc: number | null;
  lastFailure: LastFailure | null;
  /** When the next attempt is due while the forwarder waits out a backoff; known to the running server only. */
  nextAttemptAt: string | null;
}

/** The last failed attempt: the planner's status when it answered, else the error's name (`Timeout`, …). */
export interface LastFailure {
  at: string;
  status: number | null;
  error: string | null;
  attempt: number;
}

export class PlannerStatus {
  private readonly read;

  constructor(
    db: Database,
    private readonly forwarder: Pick<PlannerForwarder, 'forwards' | 'nextAttemptAt' | 'unwrittenFailure'>,
  ) {
    this.read = plannerStatusReader(db);
  }

  status(installationId: string): ForwardingStatus {
    const { facts, waiting } = this.read(installationId);
    const unwritten = this.forwarder.unwrittenFailure(installationId);
    return {
      forwarding: this.forwarder.forwards(installationId),
      ...storedStatus(facts, waiting),
      // A failure not written yet is newer than the stored one.
      ...(unwritten && { lastFailure: failureView(unwritten) }),
      nextAttemptAt: isoOrNull(this.forwarder.nextAttemptAt(installationId)),
    };
  }
}

/** The stored part of the status (what `ev-ingest status` shows without a server). */
export function storedStatus(
  facts: StoredPlannerStatus | null,
  waiting: number,
): Omit<ForwardingStatus, 'forwarding' | 'nextAttemptAt'> {
  return {
    waiting,
    sent: facts?.sent ?? 0,
    givenUp: facts?.givenUp ?? 0,
    lastSentAt: isoOrNull(facts?.lastSentAt ?? null),
    lastSentUtc: facts?.lastSentUtc ?? null,
    lastFailure: lastFailureOf(facts),
  };
}

function lastFailureOf(facts: StoredPlannerStatus | null): LastFailure | null {
  if (facts?.lastFailureAt == null) return null;
  const { lastFailureAt, lastFailureStatus, lastFailureError, lastFailureAttempt } = facts;
  return failureView({
    at: lastFailureAt,
    status: lastFailureStatus,
    error: lastFailureError,
    attempt: lastFailureAttempt ?? 1,
  });
}

function failureView({ at, status, error, attempt }: Omit<PlannerFailure, 'installationId'>): LastFailure {
  return { at: new Date(at).toISOString(), status, error, attempt };
}
