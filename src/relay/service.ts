/**
 * The relay: one sample from a client of the planner's own API, stored and forwarded exactly as a
 * one-sample `POST /v1/telemetry` batch without `plannerSentUtc` from the car its token was issued to.
 */
import type { Authenticator, DeviceCaller } from '../http/auth.ts';
import { readBody, type BodyBounds } from '../http/body.ts';
import { badRequest, HttpError, messages } from '../http/errors.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import { onlyUtc, validateBatch } from '../telemetry/model.ts';
import { logDropped, type Telemetry } from '../telemetry/service.ts';
import { lenientSample, queryToken, relayParams, tlmObject } from './model.ts';

export interface RelayDeps {
  auth: Authenticator;
  /** The ingest endpoints' bounds: the same cap. */
  bodyBounds: BodyBounds;
  telemetry: Telemetry;
  log: Logger;
  now: () => number;
}

/** The relay's 401: the planner's words and no `WWW-Authenticate`, since no scheme is asked for. */
const unauthorized = () => new HttpError(401, messages.unauthorized);

export class Relay {
  /**
   * A body whose token is inside it is read before the token is known: an oversized one is drained as on
   * the other routes without a token (1 MiB or 2 s at most), so that a client still sending reads its 400.
   */
  private readonly strangerBounds: BodyBounds;

  constructor(private readonly deps: RelayDeps) {
    this.strangerBounds = { ...deps.bodyBounds, drain: limits.pairingDrainBytes, drainMs: limits.pairingDrainMs };
  }

  /**
   * Stores the request's sample; resolves once committed (at once for a sample of only `utc`: nothing to
   * store or forward), or throws the 400 or 401 to answer.
   */
  async send(request: Request): Promise<void> {
    const { bodyBounds, telemetry, log, now } = this.deps;
    const query = new URL(request.url).searchParams;
    const fromQuery = queryToken(query);
    // The query's token wins, checked before the body is read, as the ingest endpoints check theirs.
    const queryCaller = fromQuery ? this.device(fromQuery, request) : null;
    const body = await readBody(request, queryCaller ? bodyBounds : this.strangerBounds);
    const params = relayParams(query, request.headers.get('content-type'), body);
    const caller = queryCaller ?? this.device(params.token, request);
    const sample = lenientSample(tlmObject(params.tlm));
    const batch = validateBatch({ installationId: caller.installationId, samples: [sample] }, now());
    // The car app sends {"utc":N} when it has nothing else, so that the planner sees the car online.
    if (onlyUtc(batch)) return;
    if (batch.rows.length === 0) throw badRequest(batch.dropped.map(asTlmPath).join('; '));
    await telemetry.store(batch);
    logDropped(log, batch, asTlmPath);
  }

  private device(token: string | null, request: Request): DeviceCaller {
    if (token === null) throw unauthorized();
    try {
      return this.deps.auth.authenticateDevice(token, request);
    } catch (error) {
      throw error instanceof HttpError ? unauthorized() : error;
    }
  }
}

/** A drop description names the relay's one sample `tlm`, not `samples[0]`. */
const asTlmPath = (description: string) => description.replace(/^samples\[0\]/, 'tlm');
