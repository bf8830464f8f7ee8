/** Forwarding to the planner as the dashboard tells it: one word first (never colour alone), then the facts. */
import type { ForwardingStatus } from '../planner/status.ts';
import { utcText } from './format.ts';

export type Tone = 'ok' | 'bad' | 'muted';

export interface Health {
  word: 'Off' | 'OK' | 'Failing';
  tone: Tone;
  detail: string;
}

/** The last failure is newer than the last success: forwarding is failing now. */
function failingNow({ lastFailure, lastSentAt }: ForwardingStatus): boolean {
  return lastFailure !== null && (lastSentAt === null || Date.parse(lastFailure.at) > Date.parse(lastSentAt));
}

/** What the planner last answered, or what kept the answer from coming. */
export function failureText(failure: NonNullable<ForwardingStatus['lastFailure']>): string {
  return failure.status === null ? (failure.error ?? 'no answer') : `HTTP ${failure.status}`;
}

/** The last failure with its time and attempt, as the forwarding card shows it. */
export function lastFailureText(failure: NonNullable<ForwardingStatus['lastFailure']>): string {
  return `${failureText(failure)} at ${utcText(Date.parse(failure.at))} (attempt ${failure.attempt})`;
}

export function healthOf(status: ForwardingStatus): Health {
  const counts = `${status.waiting} waiting, ${status.sent} sent, ${status.givenUp} given up`;
  if (!status.forwarding) return { word: 'Off', tone: 'muted', detail: 'no planner token for this installation' };
  if (failingNow(status))
    return { word: 'Failing', tone: 'bad', detail: `${failureText(status.lastFailure!)}; ${counts}` };
  return { word: 'OK', tone: 'ok', detail: counts };
}
