/** Every limit of the service, named once; docs/reliability.md lists those a client meets. */
export const limits = {
  /** Largest accepted request body of an ingest endpoint, in bytes (512 KiB). */
  bodyBytes: 524_288,
  /** Bytes of an oversized ingest body drained before its 400, so the client reads it (16 MiB); past them, cut off. */
  bodyDrainBytes: 16 * 1024 * 1024,
  /** Bytes drained, over all requests, between two full garbage collections. */
  bodyDrainCollectBytes: 8 * 1024 * 1024,
  /** Days returned by the consumption history. */
  historyDays: 400,
  /** Installations whose serialized history answer is kept in memory (about 70 KiB each for 400 days). */
  historyCachedInstallations: 256,
  /** Largest magnitude of each number of a consumption chunk's `day` (negative: a correction). */
  consumptionValueMax: 10_000_000,
  /** Points of a charging session's power curve. */
  curvePointsMax: 1440,
  /** Characters of a charging session id. */
  sessionIdMaxChars: 64,
  /** Dropped-value descriptions listed in a telemetry answer and its log line. */
  droppedListed: 20,
  /** Characters of a key or value quoted in a dropped-value description. */
  droppedQuoteChars: 40,
  /** Minimum length of INGEST_TOKEN. */
  ingestTokenMinChars: 24,
  /** Minimum length of APPROVAL_PASSWORD. */
  approvalPasswordMinChars: 12,
  /** Lifetime of a pairing request. */
  pairingTtlMs: 10 * 60_000,
  /** Open pairing requests at most. */
  pairingOpenMax: 100,
  /** Seconds a car waits between two polls of its pairing request. */
  pairingPollIntervalS: 5,
  /** Characters of a pairing user code (shown as XXXX-XXXX). */
  userCodeChars: 8,
  /** Longest car name given at pairing. */
  deviceNameMaxChars: 64,
  /** Largest body of the routes without a token (`/v1/pair/*`, the approval form), in bytes; never drained. */
  pairingBodyBytes: 4_096,
  /** How often expired pairing requests are swept (and their uncollected devices revoked). */
  pairingSweepIntervalMs: 5_000,
  /** Wrong approval passwords in a row that start a lockout. */
  lockoutAttempts: 5,
  /** Length of an approval lockout. */
  lockoutMs: 60_000,
  /** How often the server checks whether another connection changed the devices (a command's revocation). */
  deviceReloadCheckMs: 500,
  /** A device's lastSeenAt is written at most this often. */
  lastSeenWriteIntervalMs: 60_000,
  /** Longest time one request body may take to arrive; then 400 and the connection closed. */
  bodyReadMs: 30_000,
  /** Seconds after an answer for the next request head to arrive (Bun's idleTimeout; slow bodies: see `listen`). */
  idleTimeoutSeconds: 10,
  /** Seconds the idle timer waits past `bodyReadMs` while a body arrives, so the reader's 400 goes out first. */
  uploadIdleMarginSeconds: 8,
  /** How long a database connection waits for another one's lock (a checkpoint, a backup) before failing. */
  databaseBusyMs: 5000,
  /** Pause between two tries to switch a new database to WAL while another process holds its lock. */
  walSwitchRetryMs: 10,
  /** Writes committed together in one group at most. */
  groupWritesMax: 1000,
  /** Rows of one multi-row sample insert at most (a power of two; 64 rows of every column bind 1,984 parameters). */
  samplesPerInsert: 64,
  /** Batches up to this many samples go in one statement of their own size; larger ones in powers of two. */
  samplesPerExactInsert: 16,
  /** Parameters of the prepared sample inserts the writer keeps (about 5 MiB of statements). */
  sampleInsertSize: 32_768,
  /** How long shutdown waits for in-flight requests before closing connections. */
  shutdownGraceMs: 10_000,
  /** SIGTERMs and SIGINTs that force an exit; a second only joins the stop, as one Ctrl-C may arrive twice. */
  signalsToForceExit: 3,
  /** Samples of one installation held in memory by the planner forwarder; the rest wait in the outbox. */
  plannerQueueSamples: 1000,
  /** Installations remembered as known empty, and as owing a backoff, each up to this many, the most recent kept. */
  plannerQuietInstallations: 10_000,
  /** Requests to the planner at once, over all installations. */
  plannerInFlight: 8,
  /** Attempts to hand one sample to the planner before it is given up. */
  plannerAttempts: 5,
  /** First backoff after a failed attempt; it doubles up to `plannerBackoffMaxMs`. */
  plannerBackoffFirstMs: 1000,
  plannerBackoffMaxMs: 60_000,
  /** Longest planner answer read, in bytes; real ones are `{"status":"ok"}` or a short error. */
  plannerAnswerBytes: 4_096,
  /** Deadline of one request to the planner. */
  plannerTimeoutMs: 10_000,
  /** How long sample outcomes gather into one write; a crash resends one sample per installation at most. */
  plannerMarkGatherMs: 20,
  /** Wait before retrying a failed write of outcomes (a full disk); their samples are not resent meanwhile. */
  plannerMarkRetryMs: 1000,
  /** Failed outcome writes in a row per log line after the first: once a minute at `plannerMarkRetryMs`. */
  plannerMarkFailuresLogged: 60,
  /** How long shutdown waits for requests to the planner still in flight. */
  plannerShutdownGraceMs: 5000,
} as const;

/** The waits that end slow and silent clients' connections: `limits` in service, shorter in tests. */
export interface ClientTimeouts {
  idleTimeoutSeconds: number;
  bodyReadMs: number;
}
