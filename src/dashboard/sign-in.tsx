/** @jsxImportSource @kitajs/html */
/** The sign-in page: the approval password, and why the last try was refused. */
import { Layout, Notice } from './layout.tsx';
import type { DashboardLinks } from './paths.ts';

export function SignInPage({ notice, links }: { notice?: string; links: DashboardLinks }) {
  return (
    <Layout title="Sign in" links={links}>
      <section class="signin">
        <h1>Sign in</h1>
        <Notice text={notice} />
        <p>Sign in with the server's approval password (the one that approves car pairings).</p>
        <form method="post" action={links.signIn}>
          {/* Lets password managers file the approval password under a name; the server ignores it. */}
          <input name="username" autocomplete="username" value="ev-ingest approval" hidden readonly />
          <label for="password">Approval password</label>
          <input id="password" name="password" type="password" required autocomplete="current-password" />
          <button type="submit">Sign in</button>
        </form>
      </section>
    </Layout>
  );
}
