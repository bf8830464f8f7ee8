/** @jsxImportSource @kitajs/html */
/**
 * An installation's charging sessions: the list (newest first, in pages, as cards: a table of five
 * columns does not fit a phone) and one session with its curve.
 */
import type { Session, SessionSummary } from '../charging/history.ts';
import { formatNumber, LineChart } from './charts.tsx';
import { durationText, quantityText, utcText } from './format.ts';
import { Tabs } from './installation.tsx';
import { installationTitle } from './installations.tsx';
import { Layout, ScrollBox } from './layout.tsx';
import type { DashboardLinks } from './paths.ts';

interface Owner {
  installationId: string;
  names: string[];
  formToken: string;
  links: DashboardLinks;
}

/** The session's energy and the state of charge it went from and to. */
const socText = (s: SessionSummary) =>
  s.startSocPercent === null && s.endSocPercent === null
    ? '–'
    : `${quantityText(s.startSocPercent, '%', 0)} → ${quantityText(s.endSocPercent, '%', 0)}`;

const lengthOf = (s: SessionSummary) => s.durationSeconds ?? (s.endedAt - s.startedAt) / 1000;

export function SessionsPage({
  owner,
  sessions,
  next,
}: {
  owner: Owner;
  sessions: SessionSummary[];
  next: string | null;
}) {
  const title = installationTitle(owner.names, owner.installationId);
  return (
    <Layout title={`Charging sessions · ${title}`} links={owner.links} formToken={owner.formToken}>
      <h1 safe>{title}</h1>
      <p class="id muted" safe>{`Installation ${owner.installationId}`}</p>
      <Tabs installationId={owner.installationId} current="sessions" links={owner.links} />
      <section aria-labelledby="sessions">
        <h2 id="sessions">Charging sessions</h2>
        {sessions.length === 0 ? (
          <p>No charging sessions recorded.</p>
        ) : (
          <>
            <p class="muted">Newest first.</p>
            <ul class="sessions">
              {sessions.map((s) => (
                <li>
                  <h3>
                    <a href={owner.links.session(owner.installationId, s.sessionId)} safe>
                      {utcText(s.startedAt)}
                    </a>
                  </h3>
                  <dl>
                    <div>
                      <dt>Energy</dt>
                      <dd safe>{quantityText(s.energyKwh, 'kWh', 2)}</dd>
                    </div>
                    <div>
                      <dt>Length</dt>
                      <dd safe>{durationText(lengthOf(s))}</dd>
                    </div>
                    <div>
                      <dt>Charge</dt>
                      <dd safe>{socText(s)}</dd>
                    </div>
                    <div>
                      <dt>Cost</dt>
                      <dd safe>{s.totalCost === null ? '–' : formatNumber(s.totalCost, 2)}</dd>
                    </div>
                  </dl>
                </li>
              ))}
            </ul>
          </>
        )}
        {next === null ? (
          ''
        ) : (
          <p>
            <a href={`${owner.links.sessions(owner.installationId)}?before=${encodeURIComponent(next)}`}>
              Older sessions
            </a>
          </p>
        )}
      </section>
    </Layout>
  );
}

const timeOfDay = (ms: number) => new Date(ms).toISOString().slice(11, 16);

export function SessionPage({ owner, session }: { owner: Owner; session: Session }) {
  const curve = session.curve ?? [];
  const soc = curve.filter((p) => p.socPercent !== undefined);
  return (
    <Layout title={`Charging session · ${utcText(session.startedAt)}`} links={owner.links} formToken={owner.formToken}>
      <h1 safe>{`Charging session of ${utcText(session.startedAt)}`}</h1>
      <p>
        <a href={owner.links.sessions(owner.installationId)}>All charging sessions</a>
      </p>
      <section aria-labelledby="summary">
        <h2 id="summary">Summary</h2>
        <dl>
          <dt>Session</dt>
          <dd class="id" safe>
            {session.sessionId}
          </dd>
          <dt>Started</dt>
          <dd safe>{utcText(session.startedAt)}</dd>
          <dt>Ended</dt>
          <dd safe>{utcText(session.endedAt)}</dd>
          <dt>Length</dt>
          <dd safe>{durationText(lengthOf(session))}</dd>
          <dt>Energy</dt>
          <dd safe>{quantityText(session.energyKwh, 'kWh', 2)}</dd>
          <dt>From the grid</dt>
          <dd safe>{quantityText(session.gridEnergyKwh, 'kWh', 2)}</dd>
          <dt>Charging loss</dt>
          <dd safe>{quantityText(session.chargingLossPercent, '%')}</dd>
          <dt>Charge</dt>
          <dd safe>{socText(session)}</dd>
          <dt>Price</dt>
          <dd safe>{session.pricePerKwh === null ? '–' : `${formatNumber(session.pricePerKwh, 4)} per kWh`}</dd>
          <dt>Cost</dt>
          <dd safe>{session.totalCost === null ? '–' : formatNumber(session.totalCost, 2)}</dd>
        </dl>
      </section>
      <section aria-labelledby="curve">
        <h2 id="curve">Power and state of charge</h2>
        {curve.length === 0 ? (
          <p>The car sent no curve for this session.</p>
        ) : (
          <div class="pair">
            <div>
              <LineChart
                id="power"
                title="Charging power over time (UTC)"
                unit="kW"
                xLabel={timeOfDay}
                points={curve.map((p) => ({ x: p.timestampMs, y: p.powerKw }))}
              />
              {soc.length === 0 ? (
                <p>No state of charge in the curve.</p>
              ) : (
                <LineChart
                  id="soc"
                  title="State of charge over time (UTC)"
                  unit="%"
                  yRange={[0, 100]}
                  xLabel={timeOfDay}
                  points={soc.map((p) => ({ x: p.timestampMs, y: p.socPercent! }))}
                />
              )}
            </div>
            <ScrollBox label="Curve table" long>
              <table>
                <caption>The curve</caption>
                <thead>
                  <tr>
                    <th scope="col">Time (UTC)</th>
                    <th scope="col" class="n">
                      Power (kW)
                    </th>
                    <th scope="col" class="n">
                      Charge (%)
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {curve.map((p) => (
                    <tr>
                      <th scope="row" safe>
                        {new Date(p.timestampMs).toISOString().slice(11, 19)}
                      </th>
                      <td class="n" safe>
                        {formatNumber(p.powerKw, 2)}
                      </td>
                      <td class="n" safe>
                        {p.socPercent === undefined ? '–' : formatNumber(p.socPercent)}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollBox>
          </div>
        )}
      </section>
    </Layout>
  );
}
