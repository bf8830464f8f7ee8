/** @jsxImportSource @kitajs/html */
/**
 * Pairing: the car's JSON endpoints (`/v1/pair/start`, `/v1/pair/poll`) and the owner's approval
 * page (`/pair`). Registered only when APPROVAL_PASSWORD is set.
 */
import { html } from '@elysiajs/html';
import { Elysia } from 'elysia';
import type { Config } from '../config.ts';
import { handlerReadsBody, readBody, readJsonObject, type BodyBounds } from '../http/body.ts';
import { badRequest, describeError, HttpError, messages } from '../http/errors.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import { approvalUrl } from './approval-url.ts';
import type { PairingBook, PairingRequest } from './book.ts';
import { displayUserCode, parseUserCode } from './code.ts';
import type { ApprovalLock } from './lock.ts';
import { parsePoll, parseStart } from './model.ts';
import {
  ApprovalPage,
  CodePage,
  lockedText,
  MessagePage,
  NO_STORE,
  OutcomePage,
  PAGE_HEADERS,
  PAIR_PATH,
  pageAnswer,
  wrongPasswordText,
  type BackLink,
  type PageAnswer,
} from './page.tsx';

export interface PairingDeps {
  book: PairingBook;
  lock: ApprovalLock;
  config: Pick<Config, 'publicUrl' | 'trustProxy'>;
  /** The bounds of the bodies anyone may send: small, never drained. */
  bodyBounds: BodyBounds;
  log: Logger;
}

type PageHandler = (request: Request) => Promise<PageAnswer>;

interface PageContext {
  request: Request;
  set: { status?: number | string; headers: Record<string, string | number> };
  html(page: JSX.Element): string | Response | Promise<string | Response>;
}

/** A code no open request has: also one whose car collected its token after an approval (it is paired). */
const UNKNOWN_CODE =
  "This code is not open: it has expired, or the car has already collected its token (then it is paired). Check the code on the car's screen, or start pairing again there.";

/** Text that no user code can be: a typo, not a reason to start over. */
const NOT_A_CODE = 'That is not a pairing code. Type the 8 letters the car shows, such as BCDF-GHJK.';

/** The code page for a code that is not open: why, as far as the page can tell, and what was typed, to fix in place. */
const closedCode = (typed: string | null, code: string | null) =>
  pageAnswer(404, <CodePage notice={code === null ? NOT_A_CODE : UNKNOWN_CODE} typed={typed} />);

export function pairingRoutes({ book, lock, config, bodyBounds, log }: PairingDeps) {
  /** A page handler's answer; a failure becomes a page too, never JSON or a stack trace. */
  const answerOf = async (handle: PageHandler, request: Request): Promise<PageAnswer> => {
    try {
      return await handle(request);
    } catch (error) {
      if (error instanceof HttpError && error.status === 400) {
        // The error's headers too: `Connection: close` stops an oversized upload still arriving.
        const text = `The form could not be read (${error.message}). Go back and try again.`;
        return pageAnswer(400, <MessagePage title="Form not accepted" text={text} />, error.headers);
      }
      log.error('pair.page_failed', { error: describeError(error) });
      return pageAnswer(500, <MessagePage title="Something went wrong" text="The server could not complete this. Try again." />);
    }
  };

  /** Every `/pair` answer is a page with the strict headers, failures included. */
  const page =
    (handle: PageHandler) =>
    async ({ request, set, html }: PageContext) => {
      const { status, page, headers } = await answerOf(handle, request);
      set.status = status;
      Object.assign(set.headers, PAGE_HEADERS, headers);
      return html(page);
    };

  const showCode = async (request: Request) => {
    const input = new URL(request.url).searchParams.get('code');
    if (input === null) return pageAnswer(200, <CodePage />);
    const code = parseUserCode(input);
    const pairing = code === null ? undefined : book.find(code);
    if (!pairing) return closedCode(input, code);
    const { state } = pairing.standing;
    if (state === 'pending') return pageAnswer(200, <ApprovalPage request={pairing} msLeft={book.timeLeft(pairing)} notice={lockNotice(lock)} />);
    if (state === 'approving') return beingApprovedPage(pairing);
    return pageAnswer(200, <OutcomePage outcome={state} request={pairing} before />);
  };

  // Checked in the contract's order: the lock, the code, the password, then the decision. The lock is
  // checked again once the form has arrived, in case it began meanwhile.
  const decide = async (request: Request) => {
    const locked = lockedPage(lock, request);
    if (locked) return locked;
    const form = await readForm(request, bodyBounds);
    const lockedMeanwhile = lockedPage(lock, request);
    if (lockedMeanwhile) return lockedMeanwhile;
    const typed = form.get('code');
    const code = parseUserCode(typed);
    const pairing = code === null ? undefined : book.find(code);
    if (!pairing) return closedCode(typed, code);
    // 'locked' cannot come back here (nothing awaited since the check above); it counts as wrong if it did.
    if (lock.check(form.get('password')) !== 'right') {
      log.warn('pair.wrong_password', { installation: pairing.installationId });
      const nowLocked = lock.retryAfterSeconds();
      return nowLocked > 0
        ? lockoutPage(403, 'Wrong password', nowLocked, { code: pairing.userCode, text: 'Back to this car' })
        : pageAnswer(403, <ApprovalPage request={pairing} msLeft={book.timeLeft(pairing)} notice={wrongPasswordText(lock.triesLeft())} />);
    }
    const decision = form.get('decision');
    if (decision !== 'approve' && decision !== 'deny') {
      return pageAnswer(400, <ApprovalPage request={pairing} msLeft={book.timeLeft(pairing)} notice="Choose Approve or Deny." />);
    }
    const before = pairing.standing.state !== 'pending';
    const result = await book.decide(pairing, decision);
    if (result === 'expired') return closedCode(typed, code);
    if (result === 'approving') return beingApprovedPage(pairing);
    return pageAnswer(200, <OutcomePage outcome={result} request={pairing} before={before} />);
  };

  return new Elysia({ name: 'pairing' })
    // Pages are rendered by @elysiajs/html; detection off, so no other route's answer is inspected.
    .use(html({ autoDetect: false, contentType: 'text/html; charset=utf-8' }))
    .use(carRoutes(book, config, bodyBounds))
    .get(PAIR_PATH, page(showCode))
    .post(PAIR_PATH, page(decide), handlerReadsBody)
    .all(PAIR_PATH, page(notAllowed), handlerReadsBody);
}

/**
 * The car's JSON endpoints. Their answers hold its pairing id or token, so none may be cached (RFC 6749
 * 5.1): one rule for all of them, local to this instance, not a line each route could forget.
 */
function carRoutes(book: PairingBook, config: PairingDeps['config'], bodyBounds: BodyBounds) {
  return new Elysia()
    // After the handler only: a refusal (answered by the app's onError) holds no secret.
    .onAfterHandle(({ set }) => void (set.headers['cache-control'] = NO_STORE))
    .post(
      '/v1/pair/start',
      async ({ request }) => {
        const { installationId, name } = parseStart(await readJsonObject(request, bodyBounds));
        const pairing = await book.start(installationId, name);
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
    .post('/v1/pair/poll', async ({ request }) => book.poll(parsePoll(await readJsonObject(request, bodyBounds))), handlerReadsBody);
}

/**
 * The approval form's fields. The page's form is URL-encoded; a body declared as anything else (a
 * script's multipart or JSON) is refused instead of read as an empty form, which would name no code.
 */
async function readForm(request: Request, bodyBounds: BodyBounds): Promise<URLSearchParams> {
  // The type first: a body that cannot be a form is refused without reading it.
  const type = request.headers.get('content-type');
  if (type !== null && type.split(';')[0]!.trim().toLowerCase() !== 'application/x-www-form-urlencoded') {
    throw badRequest(messages.formNotUrlEncoded);
  }
  return new URLSearchParams(new TextDecoder().decode(await readBody(request, bodyBounds)));
}

async function notAllowed(): Promise<PageAnswer> {
  return pageAnswer(405, <MessagePage title="Not allowed" text="Open this page in a browser." />, { Allow: 'GET, POST' });
}

/** Another approval of this request is being saved: its outcome is not known yet. A link, not a reload, shows it: reloading a form's answer would send the form again. */
function beingApprovedPage({ userCode }: PairingRequest): PageAnswer {
  const back = { code: userCode, text: 'Show the outcome' };
  return pageAnswer(200, <MessagePage title="Being approved" text="This car is being approved right now. Open the outcome in a moment." back={back} />);
}

/**
 * The lockout's answer. Its link leads back to the car's page when the page's own address names the code
 * (the approval form posts there), else to the code form: the form itself is read only after the lock.
 */
function lockedPage(lock: ApprovalLock, request: Request): PageAnswer | null {
  const seconds = lock.retryAfterSeconds();
  if (seconds === 0) return null;
  const code = parseUserCode(new URL(request.url).searchParams.get('code'));
  return lockoutPage(429, 'Locked for now', seconds, code === null ? { text: 'Enter a code' } : { code, text: 'Back to this car' });
}

/** A page saying the lockout's seconds, with `Retry-After` and a link on that does not send the form again. */
function lockoutPage(status: 403 | 429, title: string, seconds: number, back: BackLink): PageAnswer {
  return pageAnswer(status, <MessagePage title={title} text={lockedText(seconds)} back={back} />, { 'Retry-After': String(seconds) });
}

/** Said on the approval page during a lockout, so that nobody types the password only to be refused. */
function lockNotice(lock: ApprovalLock): string | undefined {
  const seconds = lock.retryAfterSeconds();
  return seconds === 0 ? undefined : lockedText(seconds);
}
