/**
 * The pipeline shared by the ingest endpoints, in the documented order: (1) bearer check, (2) body read
 * with the cap and its size check, (3) validation, (4) ownership of the installation; then the operation.
 */
import { assertMayUse, type Authenticator, type Caller } from './auth.ts';
import { readBody, readJsonObject, type BodyBounds } from './body.ts';
import { messages } from './errors.ts';
import { uuid } from './validate.ts';

interface RouteContext {
  request: Request;
  params: Record<string, string>;
}

interface Authenticated {
  caller: Caller;
  params: Record<string, string>;
  request: Request;
}

interface AuthenticatedBody extends Authenticated {
  body: Record<string, unknown>;
}

/**
 * A handler that runs only for a valid bearer token and takes no body: one sent anyway still goes
 * through the capped read after the token, as every body does, and is dropped; for a GET, whose body Bun
 * drops unread, that holds its declared length to the cap.
 */
function authenticated<R>(auth: Authenticator, bounds: BodyBounds, handle: (input: Authenticated) => R) {
  return async ({ request, params }: RouteContext) => {
    const caller = auth.authenticate(request.headers.get('authorization'), request);
    await readBody(request, bounds);
    return handle({ caller, params, request });
  };
}

/** A handler that runs for a valid bearer token and a JSON object body within `bounds`. */
function authenticatedBody<R>(auth: Authenticator, bounds: BodyBounds, handle: (input: AuthenticatedBody) => R) {
  return async ({ request, params }: RouteContext) => {
    const caller = auth.authenticate(request.headers.get('authorization'), request);
    const body = await readJsonObject(request, bounds);
    return handle({ caller, body, params, request });
  };
}

/** What a feature's validation returns for an owned operation: at least the installation it names. */
interface OfInstallation {
  installationId: string;
}

/**
 * The whole pipeline for a body naming an installation: `parse` validates it (400), then a paired car's
 * token must be for that installation (403), and only then does `handle` run. Every ingest write goes
 * through here, so that no route can forget the ownership check.
 */
export function ownedBody<T extends OfInstallation, R>(
  auth: Authenticator,
  bounds: BodyBounds,
  parse: (body: Record<string, unknown>, params: Record<string, string>) => T,
  handle: (value: T) => R,
) {
  return authenticatedBody(auth, bounds, ({ caller, body, params }) => {
    const value = parse(body, params);
    assertMayUse(caller, value.installationId);
    return handle(value);
  });
}

/**
 * The pipeline for a read naming its installation in the path or the query: `parse` checks the path
 * and the query (400), then a paired car's token must be for that installation (403), as for a write.
 */
export function ownedRead<T extends OfInstallation, R>(
  auth: Authenticator,
  bounds: BodyBounds,
  parse: (params: Record<string, string>, query: URLSearchParams) => T,
  handle: (value: T) => R,
) {
  return authenticated(auth, bounds, ({ caller, params, request }) => {
    const value = parse(params, new URL(request.url).searchParams);
    assertMayUse(caller, value.installationId, messages.readOtherInstallation);
    return handle(value);
  });
}

/** The pipeline for a read of the installation whose id ends the path (a route ending in `*`). */
export function ownedPath<R>(auth: Authenticator, bounds: BodyBounds, handle: (installationId: string) => R) {
  return authenticated(auth, bounds, ({ caller, params }) => {
    const installationId = uuid(pathId(params), 'installationId');
    assertMayUse(caller, installationId, messages.readOtherInstallation);
    return handle(installationId);
  });
}

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
