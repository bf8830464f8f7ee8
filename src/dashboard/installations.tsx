/** @jsxImportSource @kitajs/html */
/** The first page after the sign-in: every installation with its names, last sample, samples today and forwarding. */
import { ageText, utcText } from './format.ts';
import type { ForwardingStatus } from '../planner/status.ts';
import { healthOf, type Health } from './forwarding.ts';
import { Layout } from './layout.tsx';
import type { DashboardLinks } from './paths.ts';

export interface InstallationRow {
  installationId: string;
  /** Its active devices' names. */
  names: string[];
  /** Unix seconds. */
  lastSampleUtc: number | null;
  samplesToday: number;
  forwarding: ForwardingStatus;
}

/** The installation's names, or its id when no active device has a name. */
export function installationTitle(names: string[], installationId: string): string {
  return names.length > 0 ? names.join(', ') : installationId;
}

export function HealthText({ health }: { health: Health }) {
  return (
    <>
      <span class={`status-${health.tone}`}>{health.word}</span>
      <span class="muted" safe>{` (${health.detail})`}</span>
    </>
  );
}

export function InstallationsPage({
  rows,
  now,
  formToken,
  links,
}: {
  rows: InstallationRow[];
  now: number;
  formToken: string;
  links: DashboardLinks;
}) {
  return (
    <Layout title="Installations" links={links} formToken={formToken}>
      <h1>Installations</h1>
      {rows.length === 0 ? (
        <section>
          <p>No installation has sent anything yet.</p>
          <p class="muted">
            Pair a car (its app shows a QR code), or point the car app at this server: its installation appears here
            with its first upload.
          </p>
        </section>
      ) : (
        <div class="cards">
          {rows.map((row) => (
            <section>
              <h2>
                <a href={links.installation(row.installationId)} safe>
                  {installationTitle(row.names, row.installationId)}
                </a>
              </h2>
              <dl>
                <dt>Installation</dt>
                <dd class="id" safe>
                  {row.installationId}
                </dd>
                <dt>Last sample</dt>
                <dd safe>
                  {row.lastSampleUtc === null
                    ? 'none yet'
                    : `${ageText(row.lastSampleUtc * 1000, now)} (${utcText(row.lastSampleUtc * 1000)})`}
                </dd>
                <dt>Samples today</dt>
                <dd safe>{`${row.samplesToday} since 00:00 UTC`}</dd>
                <dt>Forwarding</dt>
                <dd>
                  <HealthText health={healthOf(row.forwarding)} />
                </dd>
              </dl>
            </section>
          ))}
        </div>
      )}
    </Layout>
  );
}
