/** Every limit of the service, named once. */
export const limits = {
  /** Largest accepted request body of an ingest endpoint, in bytes (512 KiB). */
  bodyBytes: 524_288,
  /**
   * Bytes of an oversized ingest body read past the cap and discarded before answering 400, so a client
   * still sending reads the answer instead of a reset (16 MiB); a larger body is answered at once and cut off.
   */
  bodyDrainBytes: 16 * 1024 * 1024,
  /** Bytes drained (by all requests together) between two full garbage collections, so drains keep memory flat. */
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
  /**
   * Largest body of the routes anyone may call (`/v1/pair/start`, `/v1/pair/poll`, the approval form),
   * in bytes; of an oversized one at most `pairingDrainBytes` more are read, within `pairingDrainMs`.
   */
  pairingBodyBytes: 4_096,
  /** Bytes of an oversized body of those routes read and thrown away, so that the client reads the 400 (1 MiB). */
  pairingDrainBytes: 1024 * 1024,
  /** How long that drain may take: a body still coming after it is cut off. */
  pairingDrainMs: 2000,
  /** How often expired pairing requests are swept (and their uncollected devices revoked). */
  pairingSweepIntervalMs: 5_000,
  /** Wrong approval passwords in a row that start a lockout. */
  lockoutAttempts: 5,
  /** Length of an approval lockout, of one address or of all (the backstop). */
  lockoutMs: 60_000,
  /** Wrong approval passwords from all addresses together within `lockoutMs` that lock every address (the backstop). */
  backstopAttempts: 50,
  /** How long an address where the right password was given stays spared by the backstop (30 days). */
  knownAddressMs: 30 * 24 * 3_600_000,
  /** A known address's time of its last right password is saved again at most this often. */
  knownAddressRefreshMs: 3_600_000,
  /** Client addresses whose wrong passwords or bad tokens are counted at once; the least recent are forgotten. */
  addressesTracked: 10_000,
  /** Open pairing requests from one client address at most. */
  pairingOpenPerAddress: 10,
  /** A security event repeated by one address (a bad token) or by all (a full book) is logged this often at most. */
  securityLogIntervalMs: 60_000,
  /** Lines of one such event per interval over all addresses; past them one summary line counts the rest. */
  securityLinesPerInterval: 60,
  /** A dashboard session ends this long after its last use (sliding). */
  dashboardSessionMs: 30 * 86_400_000,
  /** A used session's expiry is moved forward at most this often: a write an hour, not one a page. */
  dashboardSessionExtendMs: 3_600_000,
  /** How often the server checks whether another connection changed the devices (a CLI revocation). */
  deviceReloadCheckMs: 500,
  /** How often the server checks whether the `purge` command deleted an installation. */
  purgeCheckMs: 500,
  /** Samples deleted by one write of a purge or of the retention: small, so ingest writes go on between them. */
  deleteBatchSamples: 1000,
  /**
   * After each such write, a pause of this many times its length (at most `deletionPauseMaxMs`): deletions
   * take a fifth of the writer's time at most.
   */
  deletionPauseFactor: 4,
  deletionPauseMaxMs: 200,
  /** How often samples past TELEMETRY_RETENTION_DAYS are deleted (also once at start). */
  retentionIntervalMs: 3_600_000,
  /** Largest TELEMETRY_RETENTION_DAYS (100 years). */
  retentionDaysMax: 36_500,
  /** Free pages given back to the file system by one write after deletions (4 MiB of 4 KiB pages). */
  vacuumPagesPerWrite: 1024,
  /** A device's lastSeenAt is written at most this often. */
  lastSeenWriteIntervalMs: 60_000,
  /** Longest time reading one request body may take; a body still arriving is then cut off (400, closed). */
  bodyReadMs: 30_000,
  /**
   * Seconds a connection may wait, after an answer, for the whole head of its next request before it is
   * closed (Bun.serve idleTimeout; a new connection's first head has Bun's own fixed 10 s). Bun does not
   * restart this timer on header bytes, nor on a body arriving slower than 16 KiB/s: see `listen`.
   */
  idleTimeoutSeconds: 10,
  /**
   * Seconds the idle timer waits past `bodyReadMs` while a body may still arrive. Bun checks its timers
   * every 4 s, so it fires 6 to 10 s past the deadline: the body reader's 400 goes out first.
   */
  uploadIdleMarginSeconds: 8,
  /** How long a database connection waits for another one's lock (a checkpoint, a backup) before failing. */
  databaseBusyMs: 5000,
  /** Pause between two tries to switch a new database file to WAL while another process switches it (open.ts). */
  walSwitchRetryMs: 10,
  /** Writes committed together in one group at most. */
  groupWritesMax: 1000,
  /** Samples inserted by one statement at most (a power of two; 64 rows of every column bind 1,984 parameters). */
  samplesPerInsert: 64,
  /** Batches of up to this many samples go in by one statement of their own count; larger ones by powers of two. */
  samplesPerExactInsert: 16,
  /** Size of the multi-row sample inserts the writer keeps prepared, in parameters (at most ~5 MiB of statements). */
  sampleInsertSize: 32_768,
  /** How long shutdown waits for in-flight requests before closing connections. */
  shutdownGraceMs: 10_000,
  /** SIGTERMs and SIGINTs that end the process at once: the second only joins the stop (a process group's signal). */
  signalsToForceExit: 3,
  /** Samples of one installation held in memory by the planner forwarder; the rest wait in the outbox. */
  plannerQueueSamples: 1000,
  /**
   * Installations the planner forwarder remembers beyond those with waiting samples, the most recent kept,
   * at most this many of each kind: with an empty outbox (their next batch is queued without reading it
   * back), and with a backoff to resume.
   */
  plannerQuietInstallations: 10_000,
  /** Requests to the planner at once, over all installations. */
  plannerInFlight: 8,
  /** Attempts to hand one sample to the planner before it is given up. */
  plannerAttempts: 5,
  /** First backoff after a failed attempt; it doubles up to `plannerBackoffMaxMs`. */
  plannerBackoffFirstMs: 1000,
  plannerBackoffMaxMs: 60_000,
  /** Longest planner answer read, in bytes: real ones are `{"status":"ok"}` or a short error; longer is cut off. */
  plannerAnswerBytes: 4_096,
  /** Deadline of one request to the planner. */
  plannerTimeoutMs: 10_000,
  /**
   * Outcomes of forwarded samples are gathered this long into one write; an installation's next
   * sample waits for its predecessor's mark, so a crash can resend at most one sample of each.
   */
  plannerMarkGatherMs: 20,
  /** Wait before writing again outcomes whose write failed (a full disk); meanwhile their samples are not resent. */
  plannerMarkRetryMs: 1000,
  /** Failed outcome writes in a row (one per `plannerMarkRetryMs`): the first and every this many are logged. */
  plannerMarkFailuresLogged: 60,
  /**
   * Rows read by one statement of an export or a history read: what an export holds in memory at once,
   * and what it writes in one turn of the event loop (small, so requests are answered between pages).
   */
  exportPageRows: 128,
  /**
   * An export's turn of the event loop that other work took longer than this (ms) is followed by a wait
   * of `exportYieldFactor` times that work or the export's last page, the longer (at most
   * `exportYieldMaxMs`), before its next page.
   */
  exportBusyMs: 0.1,
  /** Page cache of an export's own read connection, in KiB. */
  exportCacheKiB: 1024,
  exportYieldFactor: 6,
  exportYieldMaxMs: 50,
  /** Charging sessions in one page of the list, by default and at most. */
  sessionsPageDefault: 100,
  sessionsPageMax: 1000,
  /** An installation's `planner.sent` line is written at most this often while its samples go out. */
  plannerSentLogMs: 60_000,
  /** How long shutdown waits for requests to the planner still in flight. */
  plannerShutdownGraceMs: 5000,
  /** A write unanswered, or a writer silent, this long turns `/v1/ready` to 503 (under the healthcheck's 5 s). */
  readyWaitMs: 3000,
  /** How long the writer's answer to one readiness ping stands for every check (never longer than `readyWaitMs`). */
  readyPingReuseMs: 1000,
  /**
   * How long one count of the samples waiting for the planner stands for the metrics' scrapes: a count
   * reads the whole backlog on the main thread, so scrapes more often than this share one.
   */
  plannerWaitingReuseMs: 5000,
  /** How long `ev-ingest healthcheck` waits for the whole 200. */
  healthcheckMs: 5000,
} as const;

/** The waits that end slow and silent clients' connections: `limits` in service, shorter in tests. */
export interface ClientTimeouts {
  idleTimeoutSeconds: number;
  bodyReadMs: number;
}
