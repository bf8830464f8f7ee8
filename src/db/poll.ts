/**
 * A check run on a timer while watching, how a server notices what another process wrote to the
 * database (a `devices revoke`, a `purge`). The timer is unref'd: it never keeps the process alive.
 */
export class Poller {
  private timer: Timer | null = null;

  constructor(
    private readonly check: () => void,
    private readonly everyMs: number,
  ) {}

  start(): void {
    this.timer ??= setInterval(this.check, this.everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
