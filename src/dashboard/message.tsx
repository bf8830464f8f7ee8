/** @jsxImportSource @kitajs/html */
/** Any other answer: a title, one line, and the way back to the installations. */
import { Layout } from './layout.tsx';
import { DASHBOARD_PATH } from './paths.ts';

export function MessagePage({ title, text }: { title: string; text: string }) {
  return (
    <Layout title={title}>
      <section>
        <h1 safe>{title}</h1>
        <p safe>{text}</p>
        <p>
          <a href={DASHBOARD_PATH}>Back to the installations</a>
        </p>
      </section>
    </Layout>
  );
}
