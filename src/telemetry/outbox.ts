/**
 * The planner forwarder as telemetry sees it: the write marks new samples pending in the samples table
 * (the outbox), and `stored` reports them so the forwarder queues them without reading them back.
 */
import type { SampleRow } from './model.ts';

/** What a committed batch changed in its installation's outbox. */
export interface OutboxChange {
  /** The samples this batch made pending (rows it inserted), oldest first. */
  added: SampleRow[];
  /** Whether the batch changed or withdrew samples already waiting: the forwarder's copies of them are stale. */
  rewritten: boolean;
}

/** The forwarder's side of the hand-off, injected into the telemetry store. */
export interface SampleForwarder {
  /** Whether this installation's samples go to the planner; decides whether new samples become pending. */
  forwards(installationId: string): boolean;
  /** After a commit that changed the installation's outbox; returns at once. */
  stored(installationId: string, change: OutboxChange): void;
}
