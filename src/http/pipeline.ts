/**
 * The pipeline plugin: a route declares what it needs (`{ auth: 'ingest', owned: read }`) and Elysia's
 * lifecycle runs it in the documented order: (1) the token or password, (2) the body read with its cap,
 * (3) validation, (4) ownership of the installation; then the handler. Every failure is thrown to the
 * app's one `onError`.
 */
import { Elysia } from 'elysia';
import type { AddressOf } from './client-address.ts';
import { assertMayUse, bearerToken, type Authenticator, type Caller } from './auth.ts';
import { readBody, readJsonObject, type BodyBounds } from './body.ts';
import { messages, tooManyRequests, unauthorized } from './errors.ts';
import { pathOf } from './on-error.ts';
import type { JsonObject } from './validate.ts';
import type { ApprovalLock } from '../pairing/lockout.ts';

/** The approval password's check, for the owner's device endpoints. */
export interface ApprovalCheck {
  lock: ApprovalLock;
  /** Tells the tokens cars hold, which are refused here without counting as wrong passwords. */
  auth: Pick<Authenticator, 'knows'>;
  addressOf: AddressOf;
}

export interface PipelineDeps {
  auth: Authenticator;
  bodyBounds: BodyBounds;
  /** Absent without APPROVAL_PASSWORD: no route may then ask for it. */
  approval?: ApprovalCheck;
}

/** What a route's `owned` reads from a request whose token and body passed. */
export interface RequestParts {
  body: JsonObject;
  params: Record<string, string>;
  query: URLSearchParams;
}

/** What an owned route's check returns: at least the installation it names. */
export interface OfInstallation {
  installationId: string;
}

export type Pipeline = ReturnType<typeof pipeline>;

/**
 * The plugin of the pipeline, with its macros:
 * - `auth: 'ingest'`: a bearer token (401) before any byte of the body, then the body read with its cap
 *   as a JSON object (400); `auth: 'approval'`: the approval password under its lockout (401, 429).
 * - `path: name`: the id that ends a `*` path, as the parameter `name` the route's `params` schema checks.
 * - `owned: read`: after validation, `read` checks what the schemas cannot (400), then a paired car's token
 *   must be for the installation it names (403); the handler gets the result as `owned`, and casts it to
 *   its read's type: Elysia types a macro's result per macro, not per route.
 */
export function pipeline({ auth, bodyBounds, approval }: PipelineDeps) {
  const callers = new WeakMap<Request, Caller>();
  const authenticate = (request: Request) =>
    callers.set(request, auth.authenticate(request.headers.get('authorization'), request));

  const callerOf = (request: Request): Caller => {
    const caller = callers.get(request);
    if (!caller) throw new Error(`${request.method} ${pathOf(request.url)} declares owned without auth: 'ingest'`);
    return caller;
  };

  const ingest = {
    // Elysia's parse stage, where no byte has been read yet; a throw here reaches onError as PARSE with its cause.
    parse: ({ request }: { request: Request }) => {
      authenticate(request);
      return readJsonObject(request, bodyBounds);
    },
    /**
     * Elysia skips the parse stage for GET and HEAD: their token is checked here, before validation. A body
     * sent anyway goes through the capped read, as every body does, and is dropped; Bun drops a GET's unread,
     * so this holds its declared length to the cap.
     */
    transform: async ({ request }: { request: Request }) => {
      if (callers.has(request)) return;
      authenticate(request);
      await readBody(request, bodyBounds);
    },
  };

  return new Elysia({ name: 'pipeline' }).macro({
    auth: (kind: 'ingest' | 'approval') => (kind === 'ingest' ? ingest : password(approval)),
    path: (name: string) => ({
      transform: (context: { params: Record<string, string> }) => {
        context.params = { [name]: pathId(context.params) };
      },
    }),
    owned: (read: (parts: RequestParts) => OfInstallation) => ({
      resolve: ({ request, params, body }: { request: Request; params: Record<string, string>; body: unknown }) => {
        const owned = read(requestParts(request, params, body as JsonObject));
        assertMayUse(callerOf(request), owned.installationId);
        return { owned };
      },
    }),
  });
}

/** The parts of a request for `owned`; its query parsed only when asked for (no body route asks). */
function requestParts(request: Request, params: Record<string, string>, body: JsonObject): RequestParts {
  return {
    body,
    params,
    get query() {
      return new URL(request.url).searchParams;
    },
  };
}

/** The hooks of `auth: 'approval'`: the password before anything else; the body is never read. */
function password(approval: ApprovalCheck | undefined) {
  if (!approval) throw new Error('a route asks for the approval password, which is not set');
  return {
    // Taking nothing in the parse stage keeps Elysia from reading a body by its content type.
    parse: () => null,
    transform: ({ request }: { request: Request }) => assertOwner(request, approval),
  };
}

/**
 * During a lockout nothing is checked; otherwise every wrong password counts, but none presented and
 * a car's token (the ingest token or a paired car's, sent here by a mistaken app) guess nothing.
 */
function assertOwner(request: Request, { lock, auth, addressOf }: ApprovalCheck): void {
  const who = { address: addressOf(request) };
  const seconds = lock.retryAfterSeconds(who);
  if (seconds > 0) throw tooManyRequests(messages.tooManyWrongPasswords, { 'Retry-After': String(seconds) });
  const candidate = bearerToken(request.headers.get('authorization'));
  if (candidate !== null && auth.knows(candidate)) throw unauthorized();
  // 'locked' cannot come back (nothing awaited since the check above); it would be refused as wrong.
  if (lock.check(candidate, who) !== 'right') throw unauthorized();
}

/** The `owned` of a read whose installation is the path's `installationId` (checked by `InstallationPath`). */
export const installationOfPath = ({ params }: RequestParts): OfInstallation => ({
  installationId: params.installationId!.toLowerCase(),
});

/**
 * The id that ends the path of a route ending in `*`: an empty id or one holding `/` then reaches the
 * route's own check (400 after the token, in the documented order) instead of matching no route (404).
 * One trailing slash is dropped, as Elysia does for every other route.
 */
export function pathId(params: Record<string, string>): string {
  const raw = (params['*'] ?? '').replace(/\/$/, '');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // a malformed escape keeps its `%`, which no id allows
  }
}

/** `204 No Content`, the answer of the idempotent PUT endpoints. */
export function noContent(): Response {
  return new Response(null, { status: 204 });
}
