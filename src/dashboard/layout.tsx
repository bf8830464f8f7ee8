/** @jsxImportSource @kitajs/html */
/** The frame of every dashboard page: the stylesheet, the header with the way home and the sign-out form. */
import type { Children } from '@kitajs/html';
import { PageHead } from '../pairing/page.tsx';
import type { DashboardLinks } from './paths.ts';

/** The name of the form field holding the session's form token. */
export const FORM_TOKEN_FIELD = 'form_token';

/** The session's form token, as a hidden field of every state-changing form. */
export function FormToken({ token }: { token: string }) {
  return <input type="hidden" name={FORM_TOKEN_FIELD} value={token} />;
}

/** `formToken`: the signed-in session's, which shows the sign-out form; none on the sign-in page. */
export function Layout({
  title,
  links,
  formToken,
  children,
}: {
  title: string;
  links: DashboardLinks;
  formToken?: string;
  children: Children;
}) {
  return (
    <html lang="en">
      <PageHead title={title}>
        <meta name="color-scheme" content="light dark" />
        <link rel="stylesheet" href={links.style} />
      </PageHead>
      <body>
        <header>
          <a class="brand" href={links.home}>
            ev-ingest
          </a>
          {formToken === undefined ? (
            ''
          ) : (
            <form method="post" action={links.signOut}>
              <FormToken token={formToken} />
              <button type="submit" class="plain">
                Sign out
              </button>
            </form>
          )}
        </header>
        <main>{children}</main>
      </body>
    </html>
  );
}

/** A notice the page leads with (a refusal, a lockout), announced to screen readers. */
export function Notice({ text }: { text: string | undefined }) {
  return text === undefined ? (
    ''
  ) : (
    <p class="notice" role="alert" safe>
      {text}
    </p>
  );
}

/**
 * A table's box that scrolls when the table is wider (or, `long`, taller) than the screen; focusable
 * and named, so a keyboard can scroll it too.
 */
export function ScrollBox({ label, long = false, children }: { label: string; long?: boolean; children: Children }) {
  return (
    <section class={long ? 'scroll long' : 'scroll'} tabindex="0" aria-label={label}>
      {children}
    </section>
  );
}
