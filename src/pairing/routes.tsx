/** @jsxImportSource @kitajs/html */
/**
 * Pairing: the car's JSON endpoints (`/v1/pair/start`, `/v1/pair/poll`) and the owner's approval
 * page (`/pair`). Registered only when APPROVAL_PASSWORD is set.
 */
import { html } from '@elysiajs/html';
import { Elysia } from 'elysia';
import type { Config } from '../config.ts';
import { handlerReadsBody, readBody, readJsonObject, type BodyBounds } from '../http/body.ts';
import { coarseAddress, type AddressOf } from '../http/client-address.ts';
import { badRequest, describeError, forbidden, HttpError, messages } from '../http/errors.ts';
import { isCrossSite, isFetchedCrossSite, type CrossSiteLog } from '../http/origin.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import { approvalUrl } from './approval-url.ts';
import type { PairingBook, PairingRequest } from './service.ts';
import { displayUserCode, parseUserCode } from './code.ts';
import type { ApprovalLock, Lockout, Presenter } from './lockout.ts';
import { parseDecision, parsePoll, parseStart } from './model.ts';
import {
  ApprovalPage,
  BEING_APPROVED,
  backToCar,
  CHOOSE_DECISION,
  CodePage,
  CROSS_SITE,
  ENTER_A_CODE,
  formNotAccepted,
  LOCKED_TITLE,
  lockedText,
  MessagePage,
  NOT_A_CODE,
  NOT_ALLOWED,
  OutcomePage,
  PAGE_HEADERS,
  PAIR_PATH,
  pageAnswer,
  showOutcome,
  SOMETHING_WENT_WRONG,
  UNKNOWN_CODE,
  WRONG_PASSWORD_TITLE,
  wrongPasswordText,
  type BackLink,
  type PageAnswer,
} from './page.tsx';

export interface PairingDeps {
  book: PairingBook;
  lock: ApprovalLock;
  config: Pick<Config, 'publicUrl' | 'trustProxy'>;
  /** The bounds of the bodies anyone may send: small, drained briefly. */
  bodyBounds: BodyBounds;
  log: Logger;
  /** Logs refused cross-site requests at most once a minute per address, shared with the dashboard. */
  crossSiteLog: CrossSiteLog;
  /** Whether a request carries a signed-in dashboard's cookie: the backstop spares it. */
  signedIn: (request: Request) => boolean;
  addressOf: AddressOf;
}

type PageHandler = (request: Request) => PageAnswer | Promise<PageAnswer>;

interface PageContext {
  request: Request;
  set: { status?: number | string; headers: Record<string, string | number> };
  html(page: JSX.Element): string | Response | Promise<string | Response>;
}

export function pairingRoutes(deps: PairingDeps) {
  const { book, config, bodyBounds, crossSiteLog, addressOf } = deps;
  return new Elysia({ name: 'pairing' })
    .use(carRoutes(book, config, bodyBounds, crossSiteLog, addressOf))
    .use(pageRoutes(deps));
}

/** The owner's approval page. */
function pageRoutes({ book, lock, config, bodyBounds, log, signedIn, crossSiteLog, addressOf }: PairingDeps) {
  const presenterOf = (request: Request): Presenter => ({
    address: addressOf(request),
    session: signedIn(request),
  });

  /** The open request of what was typed as its code, or the page saying that the code is not open. */
  const openRequest = (typed: string | null): PairingRequest | PageAnswer => {
    const code = parseUserCode(typed);
    if (code === null) return closedCodePage(typed, NOT_A_CODE);
    return book.find(code) ?? closedCodePage(typed, UNKNOWN_CODE);
  };

  const approvalPage = (status: number, pairing: PairingRequest, notice: string | undefined) => {
    const facts = {
      ageMs: book.age(pairing),
      address: coarseAddress(pairing.address),
      devices: book.pairedDevices(pairing),
    };
    const page = <ApprovalPage request={pairing} msLeft={book.timeLeft(pairing)} facts={facts} notice={notice} />;
    return pageAnswer(status, page);
  };

  const showCode = (request: Request) => {
    const typed = new URL(request.url).searchParams.get('code');
    if (typed === null) return pageAnswer(200, <CodePage />);
    const pairing = openRequest(typed);
    if (isPage(pairing)) return pairing;
    const { state } = pairing.standing;
    if (state === 'pending') return approvalPage(200, pairing, lockNotice(lock, presenterOf(request)));
    if (state === 'approving') return beingApprovedPage(pairing);
    return pageAnswer(200, <OutcomePage outcome={state} request={pairing} before />);
  };

  /** The answer to a wrong password: the approval page with the tries left, or the lockout it began. */
  const wrongPasswordPage = (pairing: PairingRequest, who: Presenter) => {
    log.warn('pairing.wrong_password', { installation: pairing.installationId, address: who.address });
    const lockout = lock.lockout(who);
    return lockout.seconds > 0
      ? lockoutPage(403, WRONG_PASSWORD_TITLE, lockout, backToCar(pairing.userCode))
      : approvalPage(403, pairing, wrongPasswordText(lock.triesLeft(who)));
  };

  // Checked in the documented order, after the site: the lock, the code, the password, then the decision.
  // The lock is checked again once the form has arrived, in case it began meanwhile.
  const decide = async (request: Request) => {
    if (isCrossSite(request, config, crossSiteLog)) return pageAnswer(403, <MessagePage {...CROSS_SITE} />);
    const who = presenterOf(request);
    const locked = lockedPage(lock, request, who);
    if (locked) return locked;
    const form = await readForm(request, bodyBounds);
    const lockedMeanwhile = lockedPage(lock, request, who);
    if (lockedMeanwhile) return lockedMeanwhile;
    const typed = form.get('code');
    const pairing = openRequest(typed);
    if (isPage(pairing)) return pairing;
    // 'locked' cannot come back here (nothing awaited since the check above); it counts as wrong if it did.
    if (lock.check(form.get('password'), who) !== 'right') return wrongPasswordPage(pairing, who);
    const decision = parseDecision(form);
    if (decision === null) return approvalPage(400, pairing, CHOOSE_DECISION);
    const before = pairing.standing.state !== 'pending';
    const result = await book.decide(pairing, decision);
    if (result === 'expired') return closedCodePage(typed, UNKNOWN_CODE);
    if (result === 'approving') return beingApprovedPage(pairing);
    return pageAnswer(200, <OutcomePage outcome={result} request={pairing} before={before} />);
  };

  return (
    new Elysia()
      // Pages are rendered by @elysiajs/html; detection off, so no other route's answer is inspected.
      .use(html({ autoDetect: false, contentType: 'text/html; charset=utf-8' }))
      .get(PAIR_PATH, pageRoute(showCode, log))
      .post(PAIR_PATH, pageRoute(decide, log), handlerReadsBody)
      .all(PAIR_PATH, pageRoute(notAllowedPage, log), handlerReadsBody)
  );
}

/**
 * The car's JSON endpoints. Their answers hold its pairing id or token, so none may be cached (RFC 6749
 * 5.1): one rule for all of them, local to this instance, not a line each route could forget. Another site's
 * page is refused before the body is read.
 */
function carRoutes(
  book: PairingBook,
  config: PairingDeps['config'],
  bodyBounds: BodyBounds,
  crossSiteLog: CrossSiteLog,
  addressOf: AddressOf,
) {
  return (
    new Elysia()
      // A car sends no Sec-Fetch-Site; a page in the owner's browser could fill the owner's address's slots.
      .onBeforeHandle(({ request }) => {
        if (isFetchedCrossSite(request, config, crossSiteLog)) throw forbidden(messages.crossSite);
      })
      .post(
        '/v1/pair/start',
        async ({ request }) => {
          const { installationId, name } = parseStart(await readJsonObject(request, bodyBounds));
          const address = addressOf(request);
          const pairing = await book.start(installationId, name, address);
          const userCode = displayUserCode(pairing.userCode);
          return {
            pairingId: pairing.pairingId,
            userCode,
            approvalUrl: approvalUrl(config, request, userCode),
            expiresIn: limits.pairingTtlMs / 1000,
            interval: limits.pairingPollIntervalS,
          };
        },
        handlerReadsBody,
      )
      .post(
        '/v1/pair/poll',
        async ({ request }) => book.poll(parsePoll(await readJsonObject(request, bodyBounds))),
        handlerReadsBody,
      )
  );
}

/**
 * The approval form's fields. The page's form is URL-encoded; a body declared as anything else (a
 * script's multipart or JSON) is refused instead of read as an empty form, which would name no code.
 */
export async function readForm(request: Request, bodyBounds: BodyBounds): Promise<URLSearchParams> {
  // The type first: a body that cannot be a form is refused without reading it.
  const type = request.headers.get('content-type');
  if (type !== null && type.split(';')[0]!.trim().toLowerCase() !== 'application/x-www-form-urlencoded') {
    throw badRequest(messages.formNotUrlEncoded);
  }
  return new URLSearchParams(new TextDecoder().decode(await readBody(request, bodyBounds)));
}

/** Every `/pair` answer is a page with the strict headers, failures included. */
function pageRoute(handle: PageHandler, log: Logger) {
  return async ({ request, set, html }: PageContext) => {
    const { status, page, headers } = await answerOf(handle, request, log);
    set.status = status;
    Object.assign(set.headers, PAGE_HEADERS, headers);
    return html(page);
  };
}

/** A page handler's answer; a failure becomes a page too, never JSON or a stack trace. */
async function answerOf(handle: PageHandler, request: Request, log: Logger): Promise<PageAnswer> {
  try {
    return await handle(request);
  } catch (error) {
    if (error instanceof HttpError && error.status === 400) {
      // The error's headers too: `Connection: close` stops an oversized upload still arriving.
      return pageAnswer(400, <MessagePage {...formNotAccepted(error.message)} />, error.headers);
    }
    log.error('pairing.page_failed', { error: describeError(error) });
    return pageAnswer(500, <MessagePage {...SOMETHING_WENT_WRONG} />);
  }
}

function notAllowedPage(): PageAnswer {
  return pageAnswer(405, <MessagePage {...NOT_ALLOWED} />, { Allow: 'GET, POST' });
}

/** The code page for a code that is not open: why, as far as the page can tell, and what was typed, to fix in place. */
function closedCodePage(typed: string | null, why: string): PageAnswer {
  return pageAnswer(404, <CodePage notice={why} typed={typed} />);
}

/** Whether a lookup answered with a page instead of the request. */
function isPage(found: PairingRequest | PageAnswer): found is PageAnswer {
  return 'page' in found;
}

/**
 * Another approval of this request is being saved. A link, not a reload, shows the outcome: reloading
 * a form's answer would send the form again.
 */
function beingApprovedPage({ userCode }: PairingRequest): PageAnswer {
  return pageAnswer(200, <MessagePage {...BEING_APPROVED} back={showOutcome(userCode)} />);
}

/**
 * The lockout's answer. Its link leads back to the car's page when the page's own address names the code
 * (the approval form posts there), else to the code form: the form itself is read only after the lock.
 */
function lockedPage(lock: ApprovalLock, request: Request, who: Presenter): PageAnswer | null {
  const lockout = lock.lockout(who);
  if (lockout.seconds === 0) return null;
  const code = parseUserCode(new URL(request.url).searchParams.get('code'));
  return lockoutPage(429, LOCKED_TITLE, lockout, code === null ? ENTER_A_CODE : backToCar(code));
}

/** A page saying the lockout's seconds, with `Retry-After` and a link on that does not send the form again. */
function lockoutPage(status: 403 | 429, title: string, lockout: Lockout, back: BackLink): PageAnswer {
  const page = <MessagePage title={title} text={lockedText(lockout)} back={back} />;
  return pageAnswer(status, page, { 'Retry-After': String(lockout.seconds) });
}

/** Said on the approval page during a lockout, so that nobody types the password only to be refused. */
function lockNotice(lock: ApprovalLock, who: Presenter): string | undefined {
  const lockout = lock.lockout(who);
  return lockout.seconds === 0 ? undefined : lockedText(lockout);
}
