/**
 * `GET` and `POST /abrp/1/tlm/send`: the planner's telemetry endpoint, so that its clients need only
 * their base URL changed. Answers in the planner's shapes, which those clients check for success.
 */
import { Elysia } from 'elysia';
import { handlerReadsBody } from '../http/body.ts';
import { HttpError } from '../http/errors.ts';
import type { Relay } from './service.ts';

const PATH = '/abrp/1/tlm/send';
const HEADERS = { 'content-type': 'application/json' };
const OK = JSON.stringify({ status: 'ok' });

export function relayRoutes(relay: Relay) {
  const send = async ({ request }: { request: Request }) => {
    try {
      await relay.send(request);
      return new Response(OK, { headers: HEADERS });
    } catch (error) {
      if (!(error instanceof HttpError)) throw error; // a 500, answered as every route's
      return Response.json(
        { status: 'error', error: error.message },
        { status: error.status, headers: { ...HEADERS, ...error.headers } },
      );
    }
  };
  return new Elysia({ name: 'relay' }).get(PATH, send, handlerReadsBody).post(PATH, send, handlerReadsBody);
}
