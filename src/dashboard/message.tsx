/** @jsxImportSource @kitajs/html */
/** Any other answer: a title, one line, and the way back to the installations. */
import { Layout } from './layout.tsx';
import type { DashboardLinks } from './paths.ts';

export function MessagePage({ title, text, links }: { title: string; text: string; links: DashboardLinks }) {
  return (
    <Layout title={title} links={links}>
      <section>
        <h1 safe>{title}</h1>
        <p safe>{text}</p>
        <p>
          <a href={links.home}>Back to the installations</a>
        </p>
      </section>
    </Layout>
  );
}
