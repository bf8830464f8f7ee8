/** @jsxImportSource @kitajs/html */
/**
 * The owner's dashboard at `/dashboard`: sign-in with the approval password, then server-rendered pages
 * without script. Registered only when APPROVAL_PASSWORD is set.
 */
import { html } from '@elysiajs/html';
import { Elysia } from 'elysia';
import type { Config } from '../config.ts';
import { handlerReadsBody, type BodyBounds } from '../http/body.ts';
import type { AddressOf } from '../http/client-address.ts';
import { describeError, HttpError } from '../http/errors.ts';
import { type CrossSiteLog, isCrossSite } from '../http/origin.ts';
import type { Logger } from '../log.ts';
import { lockedText, pageAnswer, pageHeaders, wrongPasswordText, type PageAnswer } from '../pairing/page.tsx';
import type { Presenter } from '../pairing/lockout.ts';
import { readForm } from '../pairing/routes.tsx';
import { clearedCookie, sessionCookie, sessionToken } from './cookie.ts';
import { FORM_TOKEN_FIELD } from './layout.tsx';
import { MessagePage } from './message.tsx';
import { DASHBOARD_PATH, type DashboardLinks, SIGN_IN_PATH, SIGN_OUT_PATH } from './paths.ts';
import type { DashboardSession, DashboardSessions } from './service.ts';
import { SignInPage } from './sign-in.tsx';
import { DASHBOARD_CSS, STYLE_PATH } from './style.ts';

/**
 * Headers of every dashboard page: those of /pair, with the stylesheet served from here. The referrer
 * goes to this origin only: under `no-referrer` a browser sends `Origin: null` with a form, which the
 * same-site check must refuse; no other site learns a dashboard address.
 */
export const DASHBOARD_HEADERS = { ...pageHeaders(`'self'`), 'Referrer-Policy': 'same-origin' };

export interface DashboardDeps {
  sessions: DashboardSessions;
  config: Pick<Config, 'publicUrl' | 'trustProxy'>;
  /** The addresses the pages and redirects send to the browser (under PUBLIC_URL's path). */
  links: DashboardLinks;
  /** The bounds of the bodies anyone may send: small, an oversized one drained a little. */
  bodyBounds: BodyBounds;
  log: Logger;
  /** Logs refused cross-site posts at most once a minute per address, shared with /pair. */
  crossSiteLog: CrossSiteLog;
  /** The pages behind the sign-in, given the signed-in session. */
  pages: SignedInRoutes;
  addressOf: AddressOf;
}

/** A page handler behind the sign-in: the request, the session, the route's parameters. */
export type SignedInHandler = (
  request: Request,
  session: DashboardSession,
  params: Record<string, string>,
) => PageAnswer | Response | Promise<PageAnswer | Response>;

/** Pages behind the sign-in by method and path pattern; a POST's form token is checked before its handler runs. */
export interface SignedInRoutes {
  get: Record<string, SignedInHandler>;
  post: Record<
    string,
    (
      request: Request,
      session: DashboardSession,
      params: Record<string, string>,
      form: URLSearchParams,
    ) => PageAnswer | Promise<PageAnswer>
  >;
}

interface PageContext {
  request: Request;
  params: Record<string, string>;
  set: { status?: number | string; headers: Record<string, string | number> };
  html(page: JSX.Element): string | Response | Promise<string | Response>;
}

type Handler = (
  request: Request,
  params: Record<string, string>,
) => PageAnswer | Response | Promise<PageAnswer | Response>;

export function dashboardRoutes(deps: DashboardDeps) {
  const { sessions, config, bodyBounds, log, crossSiteLog, pages, addressOf, links } = deps;
  /** Who signs in: the client's address (no session yet), as the lockout counts it. */
  const presenterOf = (request: Request): Presenter => ({
    address: addressOf(request),
  });

  const signInPage = (status: number, notice?: string, headers?: Record<string, string>) =>
    pageAnswer(status, <SignInPage notice={notice} links={links} />, headers);

  const showSignIn = async (request: Request) => {
    if (await sessions.open(sessionToken(request, config))) return redirect(links.home);
    // Said before any password is typed, so that nobody types it during a lockout only to be refused.
    const lockout = sessions.lockout(presenterOf(request));
    return signInPage(200, lockout.seconds > 0 ? lockedText(lockout) : undefined);
  };

  const signIn = async (request: Request) => {
    if (isCrossSite(request, config, crossSiteLog)) return refusedForm('cross-site');
    const form = await readForm(request, bodyBounds);
    const who = presenterOf(request);
    const result = await sessions.signIn(form.get('password'), who, sessionToken(request, config));
    if (result.outcome === 'locked') {
      return signInPage(429, lockedText(result.lockout), retryAfter(result.lockout.seconds));
    }
    if (result.outcome === 'wrong') {
      log.warn('dashboard.wrong_password', { address: who.address });
      return result.lockout.seconds > 0
        ? signInPage(403, lockedText(result.lockout), retryAfter(result.lockout.seconds))
        : signInPage(403, wrongPasswordText(result.triesLeft));
    }
    log.info('dashboard.signed_in', { address: who.address });
    return redirect(links.home, { 'Set-Cookie': sessionCookie(result.token, request, config) });
  };

  /** Opens the request's session, or sends the browser to the sign-in page (forgetting a dead cookie). */
  const signedIn =
    (handle: SignedInHandler): Handler =>
    async (request, params) => {
      const token = sessionToken(request, config);
      const session = await sessions.open(token);
      if (session === null)
        return redirect(links.signIn, token === null ? {} : { 'Set-Cookie': clearedCookie(request, config) });
      const answer = await handle(request, session, params);
      if (session.renewed) withHeader(answer, 'Set-Cookie', sessionCookie(session.token, request, config));
      return answer;
    };

  /** A state-changing form: from this site only, carrying the session's form token. */
  const signedInForm = (handle: SignedInRoutes['post'][string]): Handler =>
    signedIn(async (request, session, params) => {
      if (isCrossSite(request, config, crossSiteLog)) return refusedForm('cross-site');
      const form = await readForm(request, bodyBounds);
      if (!sessions.formTokenMatches(session, form.get(FORM_TOKEN_FIELD))) return refusedForm('form token');
      return handle(request, session, params, form);
    });

  const signOut = signedInForm(async (request, session) => {
    await sessions.signOut(session);
    log.info('dashboard.signed_out');
    return redirect(links.signIn, { 'Set-Cookie': clearedCookie(request, config) });
  });

  /** A form refused before anything was done: another site's, or one without this session's token. */
  const refusedForm = (reason: string) => {
    log.warn('dashboard.form_refused', { reason });
    return pageAnswer(
      403,
      <MessagePage
        title="Form not accepted"
        text="This form did not come from this dashboard's current page. Reload the page and try again."
        links={links}
      />,
    );
  };

  const app = new Elysia({ name: 'dashboard' })
    // Pages are rendered by @elysiajs/html; detection off, so no other route's answer is inspected.
    .use(html({ autoDetect: false, contentType: 'text/html; charset=utf-8' }))
    .get(STYLE_PATH, () => new Response(DASHBOARD_CSS, { headers: STYLE_HEADERS }))
    .get(SIGN_IN_PATH, page(showSignIn, deps))
    .post(SIGN_IN_PATH, page(signIn, deps), handlerReadsBody)
    .post(SIGN_OUT_PATH, page(signOut, deps), handlerReadsBody);
  for (const [path, handle] of Object.entries(pages.get)) app.get(path, page(signedIn(handle), deps));
  for (const [path, handle] of Object.entries(pages.post))
    app.post(path, page(signedInForm(handle), deps), handlerReadsBody);
  // Any other method or path under /dashboard, the bare path included, is a page too: with the page headers.
  for (const path of [DASHBOARD_PATH, `${DASHBOARD_PATH}/*`]) {
    app.all(
      path,
      page(() => notFoundPage(links), deps),
      handlerReadsBody,
    );
  }
  return app;
}

/** The stylesheet's address changes with its text, so it may be kept for good. */
const STYLE_HEADERS = {
  'Content-Type': 'text/css; charset=utf-8',
  'Cache-Control': 'public, max-age=31536000, immutable',
  'X-Content-Type-Options': 'nosniff',
};

/** 303: after a form, the browser GETs the next page, so a reload does not send the form again. */
export function redirect(location: string, headers: Record<string, string> = {}): PageAnswer {
  return pageAnswer(303, '', { Location: location, ...headers });
}

function retryAfter(seconds: number): Record<string, string> {
  return { 'Retry-After': String(seconds) };
}

export function notFoundPage(links: DashboardLinks, what = 'page'): PageAnswer {
  return pageAnswer(
    404,
    <MessagePage title="Not found" text={`There is no such ${what} on this dashboard.`} links={links} />,
  );
}

function withHeader(answer: PageAnswer | Response, name: string, value: string): void {
  if (answer instanceof Response) answer.headers.set(name, value);
  else answer.headers[name] = value;
}

/** Every dashboard answer carries the page headers, failures included; a Response (an export) goes out as it is. */
function page(handle: Handler, deps: Pick<DashboardDeps, 'log' | 'links'>) {
  return async ({ request, params, set, html }: PageContext) => {
    const answer = await answerOf(handle, request, params ?? {}, deps);
    if (answer instanceof Response) return answer;
    set.status = answer.status;
    Object.assign(set.headers, DASHBOARD_HEADERS, answer.headers);
    return html(answer.page);
  };
}

async function answerOf(
  handle: Handler,
  request: Request,
  params: Record<string, string>,
  { log, links }: Pick<DashboardDeps, 'log' | 'links'>,
) {
  try {
    return await handle(request, params);
  } catch (error) {
    if (error instanceof HttpError && error.status === 400) {
      return pageAnswer(
        400,
        <MessagePage title="Form not accepted" text={`The form could not be read (${error.message}).`} links={links} />,
        error.headers,
      );
    }
    log.error('dashboard.page_failed', { error: describeError(error) });
    return pageAnswer(
      500,
      <MessagePage title="Something went wrong" text="The server could not complete this. Try again." links={links} />,
    );
  }
}
