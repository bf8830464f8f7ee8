/** @jsxImportSource @kitajs/html */
/**
 * The approval page for the owner's phone: server-rendered, no script at all, every value escaped.
 * Its only inline style is allowed by hash in the content security policy.
 */
import { createHash } from 'node:crypto';
import { escapeHtml, type Children } from '@kitajs/html';
import { limits } from '../limits.ts';
import type { PairingRequest } from './service.ts';
import { displayUserCode } from './code.ts';
import type { Lockout } from './lockout.ts';

const safeStyle = `
body{font-family:system-ui,sans-serif;margin:0;padding:1rem;background:#f6f7f9;color:#1b1f24;font-size:1.1rem;
line-height:1.45}
main{max-width:32rem;margin:0 auto;background:#fff;border-radius:.75rem;padding:1.25rem;box-shadow:0 1px 4px #0002}
h1{font-size:1.4rem;margin:0 0 1rem}p{overflow-wrap:anywhere}
dl{margin:0 0 1rem}dt{font-size:.9rem;color:#555}dd{margin:0 0 .6rem;font-weight:600;overflow-wrap:anywhere}
.code{font-family:ui-monospace,monospace;font-size:1.6rem;letter-spacing:.1em}
label{display:block;margin:.5rem 0 .25rem}
input{box-sizing:border-box;width:100%;min-height:3rem;font-size:1.2rem;padding:.5rem;border:1px solid #888;
border-radius:.5rem}
.actions{display:flex;gap:.75rem;margin-top:1rem}
button{flex:1;min-height:3.25rem;font-size:1.2rem;border:0;border-radius:.5rem;padding:.5rem 1rem;color:#fff;
background:#1a7f37}
button.deny{background:#b42318}button.neutral{background:#2f5fb3}
.hint{font-size:.9rem;color:#555;margin:0 0 .25rem}
.notice{padding:.75rem;border-radius:.5rem;background:#fff4e5;border:1px solid #f0b35a;margin:0 0 1rem}
`;

const styleHash = createHash('sha256').update(safeStyle).digest('base64');

/** `Cache-Control` of every answer holding a secret: the pages, and the car's pairing id and token (RFC 6749 5.1). */
export const NO_STORE = 'no-store';

/** The approval page's path. */
export const PAIR_PATH = '/pair';

/**
 * Headers of every page (`styleSrc`: the CSP source of its style): no script, no framing, nothing cached,
 * no referrer leaking a code or an address to another site. `same-origin`, not `no-referrer`: with the
 * latter a form's post says `Origin: null`, which the cross-site check (`isCrossSite`) must refuse.
 */
export function pageHeaders(styleSrc: string): Readonly<Record<string, string>> {
  return {
    'Content-Security-Policy':
      `default-src 'none'; style-src ${styleSrc}; img-src 'self' data:; ` +
      "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
    'Cache-Control': NO_STORE,
  };
}

/** Headers of every `/pair` answer. */
export const PAGE_HEADERS = pageHeaders(`'sha256-${styleHash}'`);

/**
 * `PAGE_HEADERS` for a raw request path that names the page (`/pair`, `/pair/`, and spellings such as
 * `/./pair` whose dot segments resolve to it, as they do before routing), none for any other.
 */
export function pageHeadersOf(path: string): Readonly<Record<string, string>> {
  const resolved = URL.parse(path, 'http://localhost')?.pathname;
  return resolved === PAIR_PATH || resolved === `${PAIR_PATH}/` ? PAGE_HEADERS : {};
}

/** A page to answer with: its status, the page, and headers beyond `PAGE_HEADERS`. */
export interface PageAnswer {
  status: number;
  page: JSX.Element;
  headers: Record<string, string>;
}

export function pageAnswer(status: number, page: JSX.Element, headers: Record<string, string> = {}): PageAnswer {
  return { status, page, headers };
}

/** The head of every page (/pair's, the dashboard's): phone width, not indexed, no icon; `children` add its style. */
export function PageHead({ title, children }: { title: string; children: Children }) {
  return (
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="robots" content="noindex" />
      {/* An empty icon: no request for /favicon.ico (img-src allows data:). */}
      <link rel="icon" href="data:," />
      <title safe>{title} · ev-ingest</title>
      {children}
    </head>
  );
}

function Layout({ title, children }: { title: string; children: Children }) {
  return (
    <html lang="en">
      <PageHead title={title}>
        <style>{safeStyle}</style>
      </PageHead>
      <body>
        <main>
          <h1 safe>{title}</h1>
          {children}
        </main>
      </body>
    </html>
  );
}

function Notice({ text }: { text: string | undefined }) {
  return text === undefined ? (
    ''
  ) : (
    <p class="notice" role="alert" safe>
      {text}
    </p>
  );
}

/** The code field's `maxlength`: a code's 8 letters with room for a dash and stray spaces. */
const CODE_FIELD_CHARS = 12;

/**
 * What a person typed, as the code field holds it: trimmed and cut to its `maxlength` (counted in UTF-16
 * units, as browsers do), never through the middle of a character.
 */
function typedCode(typed: string): string {
  return typed
    .trim()
    .slice(0, CODE_FIELD_CHARS)
    .replace(/[\uD800-\uDBFF]$/, '');
}

/**
 * The form a person types a code into; as the answer for a code that is not open it holds what was typed,
 * so a typo is fixed in place (escaped here: the renderer escapes only `"` in attributes, `&amp;` would read `&`).
 */
export function CodePage({ notice, typed }: { notice?: string; typed?: string | null }) {
  return (
    <Layout title="Pair a car">
      <Notice text={notice} />
      <p>Enter the code the car shows next to its QR code.</p>
      {/* No action: the form goes to the page's own address, with or without a trailing slash or a proxy's prefix. */}
      <form method="get">
        <label for="code">Code</label>
        <input
          id="code"
          name="code"
          class="code"
          required
          autocomplete="off"
          autocapitalize="characters"
          spellcheck="false"
          placeholder="XXXX-XXXX"
          maxlength={CODE_FIELD_CHARS}
          value={typed == null ? undefined : escapeHtml(typedCode(typed))}
        />
        <div class="actions">
          <button type="submit" class="neutral">
            Continue
          </button>
        </div>
      </form>
    </Layout>
  );
}

/** What the server knows of a request beyond what its sender chose: how to tell a stranger's from the owner's car. */
export interface RequestFacts {
  ageMs: number;
  /** Where it came from, coarsely (`coarseAddress`). */
  address: string;
  /** The installation's active paired devices. */
  devices: number;
}

/** Who asks (installation, car name, code), what the server knows of the request, and the approval form. */
interface ApprovalProps {
  request: PairingRequest;
  msLeft: number;
  facts: RequestFacts;
  notice?: string;
}

export function ApprovalPage({ request, msLeft, facts, notice }: ApprovalProps) {
  const code = displayUserCode(request.userCode);
  const minutes = Math.max(1, Math.ceil(msLeft / 60_000));
  return (
    <Layout title="Approve this car?">
      <Notice text={notice} />
      <p>Check that the car's screen shows this code before you approve.</p>
      <p class="notice">Deny if you did not just start pairing on your car.</p>
      <dl>
        <dt>Code</dt>
        <dd class="code" safe>
          {code}
        </dd>
        <dt>Car name</dt>
        <dd safe>{request.name ?? '(no name given)'}</dd>
        <dt>Installation id</dt>
        <dd safe>{request.installationId}</dd>
        <dt>Requested</dt>
        <dd safe>{requestedAgo(facts.ageMs)}</dd>
        <dt>From network</dt>
        <dd safe>{facts.address}</dd>
        <dt>Paired devices of this installation</dt>
        <dd safe>{String(facts.devices)}</dd>
        <dt>Expires</dt>
        <dd safe>{`in about ${quantity(minutes, 'minute')}`}</dd>
      </dl>
      <form method="post">
        <input type="hidden" name="code" value={code} />
        {/* Lets password managers file the approval password under a name; the server ignores it. */}
        <input name="username" autocomplete="username" value="ev-ingest approval" hidden readonly />
        <label for="password">Approval password</label>
        <p id="lockout" class="hint" safe>
          {lockoutWarning}
        </p>
        <input
          id="password"
          name="password"
          type="password"
          required
          autocomplete="current-password"
          aria-describedby="lockout"
        />
        <div class="actions">
          <button type="submit" name="decision" value="approve">
            Approve
          </button>
          <button type="submit" name="decision" value="deny" class="deny">
            Deny
          </button>
        </div>
      </form>
    </Layout>
  );
}

export type Outcome = 'approved' | 'denied';

/** The answer after a decision (also when the request had been decided before). */
export function OutcomePage({
  outcome,
  request,
  before,
}: {
  outcome: Outcome;
  request: PairingRequest;
  before: boolean;
}) {
  const car = request.name ?? request.installationId;
  const title = outcome === 'approved' ? 'Car approved' : 'Car denied';
  const text =
    outcome === 'approved'
      ? `${car} will collect its token within a few seconds. You can close this page.`
      : `${car} was not paired. You can close this page.`;
  return (
    <Layout title={title}>
      <Notice text={before ? `This request had already been ${outcome}.` : undefined} />
      <p safe>{text}</p>
    </Layout>
  );
}

/** A link from a message back to the page: a request's page by its code, or without one the code form. */
export interface BackLink {
  code?: string;
  text: string;
}

/** Relative to the page's own address, behind any prefix: `?` alone drops the query and keeps the path as typed. */
const hrefOf = ({ code }: BackLink) => (code === undefined ? '?' : `?code=${displayUserCode(code)}`);

/** Any other answer: a title and one line, never a stack trace; perhaps a way back to the page. */
export function MessagePage({ title, text, back }: { title: string; text: string; back?: BackLink }) {
  return (
    <Layout title={title}>
      <p safe>{text}</p>
      {back === undefined ? (
        ''
      ) : (
        <p>
          <a href={hrefOf(back)} safe>
            {back.text}
          </a>
        </p>
      )}
    </Layout>
  );
}

/** `1 second`, `2 seconds`: a count with its noun. */
const quantity = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

const lockoutLength = quantity(limits.lockoutMs / 1000, 'second');

/** A request's age as the page says it: `just now` under a minute, else whole minutes. */
const requestedAgo = (ageMs: number) =>
  ageMs < 60_000 ? 'just now' : `${quantity(Math.floor(ageMs / 60_000), 'minute')} ago`;

/** Shown before any password is typed: the rule, not anyone's tries (wrong passwords count per network address). */
const lockoutWarning =
  `${limits.lockoutAttempts} wrong passwords in a row ` + `lock the approval password for ${lockoutLength}.`;

/** The tries left are the address's, the device endpoints' wrong ones included: what is left, not what "you" have. */
export const wrongPasswordText = (triesLeft: number) =>
  `Wrong password. ${quantity(triesLeft, 'try', 'tries')} left ` +
  `before the approval password locks for ${lockoutLength}.`;

/** The backstop's lockout is not the reader's doing: it says so, without the count of one address's. */
export const lockedText = ({ seconds, everyone }: Lockout) =>
  `Too many wrong passwords ${everyone ? 'from many addresses' : `(${limits.lockoutAttempts} in a row)`}. ` +
  `Try again in ${quantity(seconds, 'second')}.`;

/** A code no open request has: also one whose car collected its token after an approval (it is paired). */
export const UNKNOWN_CODE =
  'This code is not open: it has expired, or the car has already collected its token (then it is paired). ' +
  "Check the code on the car's screen, or start pairing again there.";

/** Text that no user code can be: a typo, not a reason to start over. */
export const NOT_A_CODE = 'That is not a pairing code. Type the 8 letters the car shows, such as BCDF-GHJK.';

/** The approval form sent with the right password but neither button's decision. */
export const CHOOSE_DECISION = 'Choose Approve or Deny.';

/** The titles of the lockout's page: after the password that locked it, and while it lasts. */
export const WRONG_PASSWORD_TITLE = 'Wrong password';
export const LOCKED_TITLE = 'Locked for now';

/** A message page's wording. */
interface Message {
  title: string;
  text: string;
}

/** A form the server could not read, with the refusal's reason. */
export const formNotAccepted = (reason: string): Message => ({
  title: 'Form not accepted',
  text: `The form could not be read (${reason}). Go back and try again.`,
});

/** Any other failure: its detail goes to the log only. */
export const SOMETHING_WENT_WRONG: Message = {
  title: 'Something went wrong',
  text: 'The server could not complete this. Try again.',
};

/** A form posted by another site's page: the owner did not send it. */
export const CROSS_SITE: Message = {
  title: 'Refused',
  text: "This form was sent from another site. Open the approval page from the car's code and decide there.",
};

/** A method other than GET and POST: a script's, not a browser's. */
export const NOT_ALLOWED: Message = { title: 'Not allowed', text: 'Open this page in a browser.' };

/** Another approval of the request is being saved: its outcome is not known yet. */
export const BEING_APPROVED: Message = {
  title: 'Being approved',
  text: 'This car is being approved right now. Open the outcome in a moment.',
};

/** Links on from a message page; none sends the form again. */
export const backToCar = (code: string): BackLink => ({ code, text: 'Back to this car' });
export const ENTER_A_CODE: BackLink = { text: 'Enter a code' };
export const showOutcome = (code: string): BackLink => ({ code, text: 'Show the outcome' });
