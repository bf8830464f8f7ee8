/**
 * The planner forwarder as telemetry sees it. The samples table is the forwarder's outbox: the write
 * marks new samples pending, and `stored` only tells the forwarder that there may be work.
 */
export interface SampleForwarder {
  /** Whether this installation's samples go to the planner; decides whether new samples become pending. */
  forwards(installationId: string): boolean;
  /** After a commit that stored at least one sample of the installation for the planner; returns at once. */
  stored(installationId: string): void;
}

