/**
 * The planner's wire format (ABRP telemetry API): one sample per form-encoded POST, answered
 * `{"status":"ok"}` on success. Nothing here logs: the body holds the key and the token.
 */
import { limits } from '../limits.ts';
import { sampleFieldNames } from '../telemetry/fields.ts';
import type { SampleRow } from '../telemetry/model.ts';

export interface PlannerCredentials {
  apiKey: string;
  token: string;
}

/** The `tlm` JSON: `utc` (seconds) and the sample's stored fields, in the field table's order. */
function tlmOf(sample: SampleRow): string {
  const tlm: Record<string, number | string> = { utc: sample[0]! };
  sampleFieldNames.forEach((name, index) => {
    const value = sample[index + 1];
    // Only usable values are stored: an absent or dropped field is null.
    if (value !== null && value !== undefined) tlm[name] = value;
  });
  return JSON.stringify(tlm);
}

/** `api_key=…&token=…&tlm=…`, application/x-www-form-urlencoded. */
export function formBody(credentials: PlannerCredentials, sample: SampleRow): string {
  return new URLSearchParams({ api_key: credentials.apiKey, token: credentials.token, tlm: tlmOf(sample) }).toString();
}

/** What became of one attempt; `reason` is what may be logged (a status code or an error class). */
export type Delivery =
  | { kind: 'accepted' }
  | { kind: 'retry'; reason: FailureReason }
  | { kind: 'rejected'; reason: FailureReason }
  /** Abandoned by shutdown: the sample stays waiting in the outbox. */
  | { kind: 'abandoned' };

export type FailureReason = { status: number } | { error: string };

/** One POST to the planner; never throws. An aborted request comes back as a retry. */
export async function postSample(url: string, body: string, signal: AbortSignal): Promise<Delivery> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
      signal,
      // The body holds the key and the token: they go to PLANNER_URL and nowhere a 3xx points (given up).
      redirect: 'manual',
    });
    const text = await answerText(response);
    if (response.status === 200) {
      if (text === null) return { kind: 'rejected', reason: { error: 'AnswerTooLarge' } };
      return isOk(text) ? { kind: 'accepted' } : { kind: 'rejected', reason: { error: 'UnexpectedAnswer' } };
    }
    const reason = { status: response.status };
    return response.status === 429 || response.status >= 500 ? { kind: 'retry', reason } : { kind: 'rejected', reason };
  } catch (error) {
    return { kind: 'retry', reason: { error: errorClass(error) } };
  }
}

/**
 * The answer's body, or null once it passes `limits.plannerAnswerBytes`: a hostile planner's endless
 * answer is cut off there, so it costs no more memory than a short one.
 */
async function answerText(response: Response): Promise<string | null> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      bytes += read.value.byteLength;
      if (bytes > limits.plannerAnswerBytes) return null;
      text += decoder.decode(read.value, { stream: true });
    }
    return text + decoder.decode();
  } finally {
    // Lets the connection go with the rest unread; it rejects after a failed read, with nothing left to cancel.
    reader.cancel().catch(() => {});
  }
}

function isOk(text: string): boolean {
  try {
    return (JSON.parse(text) as { status?: unknown } | null)?.status === 'ok';
  } catch {
    return false;
  }
}

/** A network error's code (`ECONNREFUSED`, `ECONNRESET`) or class name, never its message. */
function errorClass(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^\w{1,40}$/.test(code)) return code;
  return error instanceof Error ? error.name : 'Error';
}
