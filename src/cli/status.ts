/**
 * `ev-ingest status`: each installation's forwarding facts as stored, one line each, read from
 * DATABASE_PATH without the HTTP side (beside a running server too). Whether the server forwards, and
 * when it tries next, only the running server knows: its `GET /v1/planner/status/{id}` says.
 */
import { helpOrOption, toStderr, toStdout, usage, withCommandStorage, type Out } from './command.ts';
import { storedStatus, type ForwardingStatus, type LastFailure } from '../planner/status.ts';
import { everyPlannerStatus } from '../planner/store.ts';

export const STATUS_USAGE =
  '  ev-ingest status               forwarding to the planner, one line per installation: samples\n' +
  '                                 waiting, sent and given up, the last sent and the last failure';

export async function statusCommand(args: string[], out: Out = toStdout, err: Out = toStderr): Promise<number> {
  const notOperands = helpOrOption(args, STATUS_USAGE, out, err);
  if (notOperands !== undefined) return notOperands;
  if (args.length > 0) return usage(err, STATUS_USAGE);
  return withCommandStorage(err, (storage) => {
    for (const { installationId, facts, waiting } of everyPlannerStatus(storage.db)) {
      out(`${statusLine(installationId, storedStatus(facts, waiting))}\n`);
    }
    return 0;
  });
}

/** `ID waiting=… sent=… givenUp=… lastSentAt=… lastSentUtc=… lastFailure=…`, absent facts as `none`. */
function statusLine(installationId: string, status: Omit<ForwardingStatus, 'forwarding' | 'nextAttemptAt'>): string {
  return [
    installationId,
    `waiting=${status.waiting}`,
    `sent=${status.sent}`,
    `givenUp=${status.givenUp}`,
    `lastSentAt=${status.lastSentAt ?? 'none'}`,
    `lastSentUtc=${status.lastSentUtc ?? 'none'}`,
    `lastFailure=${failureText(status.lastFailure)}`,
  ].join(' ');
}

/** `AT status=N attempt=N` when the planner answered, `AT error=NAME attempt=N` when it did not; `none` without one. */
function failureText(failure: LastFailure | null): string {
  if (failure === null) return 'none';
  const what = failure.status === null ? `error=${failure.error}` : `status=${failure.status}`;
  return `${failure.at} ${what} attempt=${failure.attempt}`;
}
