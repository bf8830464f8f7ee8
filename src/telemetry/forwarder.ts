/**
 * The planner forwarder as telemetry sees it. The samples table is the forwarder's outbox: the write
 * marks new samples pending, and `stored` tells the forwarder what that changed, so that it can queue
 * the new samples without reading them back.
 */
import type { SampleRow } from './model.ts';

/** What a committed batch changed in its installation's outbox. */
export interface OutboxChange {
  /** The samples this batch made pending (rows it inserted), oldest first. */
  added: SampleRow[];
  /**
   * Samples already waiting were sent again (their values replaced, and those at or before
   * `plannerSentUtc` no longer waiting), or the one at `plannerSentUtc` no longer waits though the
   * batch did not repeat it. What the forwarder holds of them is stale.
   */
  rewritten: boolean;
}

export interface SampleForwarder {
  /** Whether this installation's samples go to the planner; decides whether new samples become pending. */
  forwards(installationId: string): boolean;
  /** After a commit that changed the installation's outbox; returns at once. */
  stored(installationId: string, change: OutboxChange): void;
}
