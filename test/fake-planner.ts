/**
 * A local HTTP server playing the planner (ABRP's telemetry API): it records every request and
 * answers what the test tells it to (200/400/429/500, a wrong or endless body, after a delay or once released).
 */
import type { Server } from 'bun';

export interface PlannerRequest {
  contentType: string | null;
  /** Names of the form fields in the order sent. */
  fieldNames: string[];
  apiKey: string | null;
  token: string | null;
  /** The raw `tlm` field, exactly as sent. */
  tlmText: string;
  tlm: Record<string, unknown>;
}

export interface PlannerReply {
  status?: number;
  body?: string | ReadableStream<Uint8Array>;
  /** Holds the request this long before answering. */
  delayMs?: number;
  /** Holds the request until this settles (a test releases it by hand), then answers. */
  until?: Promise<unknown>;
  /** Headers besides the JSON content type (a redirect's `location`). */
  headers?: Record<string, string>;
}

export interface FakePlanner {
  url: string;
  /** Every request received, in arrival order. */
  requests: PlannerRequest[];
  /** Requests being held right now (delayed answers). */
  readonly holding: number;
  /** Most requests in progress at once, overall and per token. */
  readonly maxInFlight: number;
  readonly maxInFlightPerToken: number;
  /** Decides each answer; the default accepts. */
  reply: (request: PlannerRequest, index: number) => PlannerReply;
  /** The `utc`s received for a token, in arrival order. */
  utcsOf(token: string): number[];
  /** Waits until `count` requests have arrived (fails after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export const ACCEPT: PlannerReply = { status: 200, body: '{"status":"ok"}' };
/** The body of every error answer: a test asserts it never reaches the log. */
export const PLANNER_ERROR_BODY = '{"status":"error","message":"planner-answer-body-not-for-logs"}';

/**
 * An answer body without end (but a cap, so a client reading all of it still finishes): `head`, then
 * spaces (JSON whitespace, so a head of `{"status":"ok"}` stays a valid answer) up to `capBytes`.
 */
export class EndlessBody {
  /** Bytes handed to the connection so far. */
  written = 0;
  /** Given out to its cap (`complete`), or `cancelled` because the client let the connection go. */
  state: 'open' | 'complete' | 'cancelled' = 'open';
  readonly stream: ReadableStream<Uint8Array>;

  constructor(head: string, capBytes: number) {
    const spaces = new Uint8Array(64 * 1024).fill(0x20);
    this.stream = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        if (this.written >= capBytes) {
          this.state = 'complete';
          return controller.close();
        }
        const chunk = this.written === 0 ? new TextEncoder().encode(head) : spaces;
        controller.enqueue(chunk);
        this.written += chunk.byteLength;
      },
      cancel: () => void (this.state = 'cancelled'),
    });
  }
}

export function startFakePlanner(reply: FakePlanner['reply'] = () => ACCEPT): FakePlanner {
  const requests: PlannerRequest[] = [];
  const inFlightByToken = new Map<string, number>();
  let inFlight = 0;
  let holding = 0;
  let maxInFlight = 0;
  let maxInFlightPerToken = 0;

  const planner: FakePlanner = {
    url: '',
    requests,
    get holding() {
      return holding;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    get maxInFlightPerToken() {
      return maxInFlightPerToken;
    },
    reply,
    utcsOf: (token) =>
      requests.filter((request) => request.token === token).map((request) => request.tlm.utc as number),
    async waitFor(count, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > until) throw new Error(`the planner got ${requests.length} requests, not ${count}`);
        await Bun.sleep(2);
      }
    },
    stop: () => server.stop(true),
  };

  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const form = new URLSearchParams(await request.text());
      const tlmText = form.get('tlm') ?? '';
      const received: PlannerRequest = {
        contentType: request.headers.get('content-type'),
        fieldNames: [...form.keys()],
        apiKey: form.get('api_key'),
        token: form.get('token'),
        tlmText,
        tlm: JSON.parse(tlmText || '{}'),
      };
      const index = requests.push(received) - 1;
      const token = received.token ?? '';
      inFlight += 1;
      inFlightByToken.set(token, (inFlightByToken.get(token) ?? 0) + 1);
      maxInFlight = Math.max(maxInFlight, inFlight);
      maxInFlightPerToken = Math.max(maxInFlightPerToken, inFlightByToken.get(token)!);
      try {
        const answer = planner.reply(received, index);
        const hold = answer.until ?? (answer.delayMs ? Bun.sleep(answer.delayMs) : null);
        if (hold) {
          holding += 1;
          await hold.finally(() => (holding -= 1));
        }
        const status = answer.status ?? 200;
        const body = answer.body ?? (status === 200 ? ACCEPT.body : PLANNER_ERROR_BODY);
        return new Response(body, { status, headers: { 'content-type': 'application/json', ...answer.headers } });
      } finally {
        inFlight -= 1;
        inFlightByToken.set(token, inFlightByToken.get(token)! - 1);
      }
    },
  });
  planner.url = new URL('/1/tlm/send', server.url).href;
  return planner;
}
