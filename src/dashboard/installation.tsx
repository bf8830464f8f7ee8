/** @jsxImportSource @kitajs/html */
/**
 * One installation: consumption of the last 30, 90 or 365 days (bars, with a table beside), lifetime
 * sums, state of health by month, the latest sample, forwarding, devices with revoke buttons, exports.
 */
import type { Device } from '../devices/store.ts';
import type { ForwardingStatus } from '../planner/status.ts';
import type { LatestSample } from '../telemetry/history.ts';
import { sampleFieldNames, sampleFields, type SampleFieldName } from '../telemetry/fields.ts';
import { BarChart, formatNumber, LineChart } from './charts.tsx';
import {
  grouped,
  groupingOf,
  PERIODS,
  totalOf,
  type ConsumptionView,
  type Driven,
  type Period,
} from './consumption-view.ts';
import { ageText, per100Km, quantityText, utcText } from './format.ts';
import { healthOf, lastFailureText } from './forwarding.ts';
import { HealthText, installationTitle } from './installations.tsx';
import { FormToken, Layout, ScrollBox } from './layout.tsx';
import type { DashboardLinks } from './paths.ts';
import { sampleLabels } from './sample-labels.ts';

export interface InstallationView {
  installationId: string;
  names: string[];
  period: Period;
  consumption: ConsumptionView;
  latest: LatestSample | null;
  forwarding: ForwardingStatus;
  devices: Device[];
  now: number;
  formToken: string;
  links: DashboardLinks;
}

/** The links between an installation's two pages. */
export function Tabs({
  installationId,
  current,
  links,
}: {
  installationId: string;
  current: 'overview' | 'sessions';
  links: DashboardLinks;
}) {
  return (
    <nav class="tabs" aria-label="Installation">
      <a href={links.installation(installationId)} aria-current={current === 'overview' ? 'page' : undefined}>
        Overview
      </a>
      <a href={links.sessions(installationId)} aria-current={current === 'sessions' ? 'page' : undefined}>
        Charging sessions
      </a>
    </nav>
  );
}

export function InstallationPage(view: InstallationView) {
  const title = installationTitle(view.names, view.installationId);
  return (
    <Layout title={title} links={view.links} formToken={view.formToken}>
      <h1 safe>{title}</h1>
      <p class="id muted" safe>{`Installation ${view.installationId}`}</p>
      <Tabs installationId={view.installationId} current="overview" links={view.links} />
      <Consumption view={view} />
      <div class="cards">
        <Lifetime lifetime={view.consumption.lifetime} />
        <Forwarding status={view.forwarding} />
      </div>
      <Health view={view} />
      <Latest latest={view.latest} now={view.now} />
      <Devices view={view} />
      <Exports installationId={view.installationId} links={view.links} />
    </Layout>
  );
}

function PeriodLinks({ view }: { view: InstallationView }) {
  return (
    <nav class="periods" aria-label="Period">
      {PERIODS.map((days) => (
        <a
          href={`${view.links.installation(view.installationId)}?days=${days}`}
          aria-current={days === view.period ? 'page' : undefined}
          safe
        >{`${days} days`}</a>
      ))}
    </nav>
  );
}

const kwhPer100 = (row: { km: number; kwh: number }) => quantityText(per100Km(row.kwh, row.km), 'kWh/100 km');
const totalText = (total: { km: number; kwh: number }) =>
  `${quantityText(total.km, 'km')}, ${quantityText(total.kwh, 'kWh')}, ${kwhPer100(total)}`;

function Consumption({ view }: { view: InstallationView }) {
  const { days } = view.consumption;
  const total = totalOf(days);
  const grouping = groupingOf(view.period);
  // The charts draw the table's rows: 30 daily bars, 13 weekly or 12 monthly, never 365 hairlines.
  const rows = grouped(days, grouping);
  const bars = (field: 'km' | 'kwh') =>
    rows.map((row) => ({ label: row.label, value: row.recorded > 0 ? row[field] : null }));
  if (view.consumption.lifetime === null) {
    return (
      <section aria-labelledby="consumption">
        <h2 id="consumption">Consumption</h2>
        <p>No days recorded yet: the car app uploads them as it records the driving.</p>
      </section>
    );
  }
  return (
    <section aria-labelledby="consumption">
      <h2 id="consumption">Consumption</h2>
      <PeriodLinks view={view} />
      <p safe>{`Last ${view.period} days: ${totalText(total)}.`}</p>
      <div class="pair">
        <div>
          <BarChart id="km" title={`Distance per ${grouping}, last ${view.period} days`} unit="km" bars={bars('km')} />
          <BarChart id="kwh" title={`Energy per ${grouping}, last ${view.period} days`} unit="kWh" bars={bars('kwh')} />
          <p class="muted">A thin mark on the baseline is a recorded 0; no bar, no record.</p>
        </div>
        <DrivenTable rows={rows.toReversed()} grouping={grouping} />
      </div>
    </section>
  );
}

/** A row's label; a partial first week or month says the day it begins: `2025-11 (from 11-26)`. */
const rowLabel = (row: Driven) =>
  row.partFrom === undefined ? row.label : `${row.label} (from ${row.partFrom.slice(5)})`;

function DrivenTable({ rows, grouping }: { rows: Driven[]; grouping: 'day' | 'week' | 'month' }) {
  const heading = grouping === 'day' ? 'Day' : grouping === 'week' ? 'Week from' : 'Month';
  return (
    <ScrollBox label="Consumption table" long>
      <table>
        <caption safe>{`Per ${grouping}, newest first`}</caption>
        <thead>
          <tr>
            <th scope="col">{heading}</th>
            <th scope="col" class="n">
              km
            </th>
            <th scope="col" class="n">
              kWh
            </th>
            <th scope="col" class="n">
              kWh/100 km
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr>
              <th scope="row" safe>
                {rowLabel(row)}
              </th>
              {row.recorded === 0 ? (
                <td colspan="3" class="muted">
                  no record
                </td>
              ) : (
                <>
                  <td class="n" safe>
                    {formatNumber(row.km)}
                  </td>
                  <td class="n" safe>
                    {formatNumber(row.kwh)}
                  </td>
                  <td class="n">{row.km > 0 ? formatNumber(per100Km(row.kwh, row.km)!) : '–'}</td>
                </>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollBox>
  );
}

function Lifetime({ lifetime }: { lifetime: ConsumptionView['lifetime'] }) {
  return (
    <section aria-labelledby="lifetime">
      <h2 id="lifetime">Lifetime</h2>
      {lifetime === null ? (
        <p>No consumption recorded yet.</p>
      ) : (
        <dl>
          <dt>Distance</dt>
          <dd safe>{quantityText(lifetime.km, 'km')}</dd>
          <dt>Energy</dt>
          <dd safe>{quantityText(lifetime.kwh, 'kWh')}</dd>
          <dt>Consumption</dt>
          <dd safe>{kwhPer100(lifetime)}</dd>
          <dt>Driving time</dt>
          <dd safe>{quantityText(lifetime.hours, 'h')}</dd>
          <dt>Charge used</dt>
          <dd safe>{quantityText(lifetime.socDrop, '% of the battery')}</dd>
        </dl>
      )}
    </section>
  );
}

function Forwarding({ status }: { status: ForwardingStatus }) {
  return (
    <section aria-labelledby="forwarding">
      <h2 id="forwarding">Forwarding to ABRP</h2>
      <p>
        <HealthText health={healthOf(status)} />
      </p>
      <dl>
        <dt>Waiting</dt>
        <dd safe>{String(status.waiting)}</dd>
        <dt>Sent</dt>
        <dd safe>{String(status.sent)}</dd>
        <dt>Given up</dt>
        <dd safe>{String(status.givenUp)}</dd>
        <dt>Last sent</dt>
        <dd safe>{status.lastSentAt === null ? 'never' : utcText(Date.parse(status.lastSentAt))}</dd>
        <dt>Last failure</dt>
        <dd safe>{status.lastFailure === null ? 'none' : lastFailureText(status.lastFailure)}</dd>
        {status.nextAttemptAt === null ? (
          ''
        ) : (
          <>
            <dt>Next attempt</dt>
            <dd safe>{utcText(Date.parse(status.nextAttemptAt))}</dd>
          </>
        )}
      </dl>
    </section>
  );
}

function Health({ view }: { view: InstallationView }) {
  const { soh } = view.consumption;
  const monthMs = (month: string) => Date.parse(`${month}-01`);
  return (
    <section aria-labelledby="health">
      <h2 id="health">State of health</h2>
      {soh.length === 0 ? (
        <p>No state of health reported yet.</p>
      ) : (
        <div class="pair">
          <LineChart
            id="soh"
            title="Battery state of health by month"
            unit="%"
            yRange={[Math.min(80, ...soh.map((p) => p.sohPercent)), 100]}
            points={soh.map((p) => ({ x: monthMs(p.month), y: p.sohPercent }))}
            xLabel={(ms) => new Date(ms).toISOString().slice(0, 7)}
          />
          <ScrollBox label="State of health table" long>
            <table>
              <caption>Newest value of each month</caption>
              <thead>
                <tr>
                  <th scope="col">Month</th>
                  <th scope="col" class="n">
                    State of health
                  </th>
                </tr>
              </thead>
              <tbody>
                {[...soh].reverse().map((p) => (
                  <tr>
                    <th scope="row" safe>
                      {p.month}
                    </th>
                    <td class="n" safe>
                      {quantityText(p.sohPercent, '%')}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollBox>
        </div>
      )}
    </section>
  );
}

/** A stored field's value with its unit from the field table. */
function fieldText(name: SampleFieldName, value: number | string): string {
  const field = sampleFields[name];
  if (field.kind === 'flag') return value === 1 ? 'yes' : 'no';
  if (field.kind === 'text') return String(value);
  return `${formatNumber(Number(value), 6)} ${field.unit}`;
}

function Latest({ latest, now }: { latest: LatestSample | null; now: number }) {
  return (
    <section aria-labelledby="latest">
      <h2 id="latest">Latest sample</h2>
      {latest === null ? (
        <p>No samples yet.</p>
      ) : (
        <dl>
          <dt>Time</dt>
          <dd safe>{`${utcText(latest.utc * 1000)} (${ageText(latest.utc * 1000, now)})`}</dd>
          {sampleFieldNames
            .filter((name) => latest[name] !== undefined)
            .map((name) => (
              <>
                <dt safe>{sampleLabels[name]}</dt>
                <dd safe>{fieldText(name, latest[name]!)}</dd>
              </>
            ))}
        </dl>
      )}
    </section>
  );
}

/** The devices as a list of cards rather than a table: the revoke button stays in sight on a phone. */
function Devices({ view }: { view: InstallationView }) {
  return (
    <section aria-labelledby="devices">
      <h2 id="devices">Devices</h2>
      {view.devices.length === 0 ? (
        <p>No paired devices.</p>
      ) : (
        <ul class="devices">
          {view.devices.map((device) => (
            <li>
              <h3 safe>{device.name ?? '(no name)'}</h3>
              <dl>
                <dt>Paired</dt>
                <dd safe>{utcText(device.createdAt)}</dd>
                <dt>Last seen</dt>
                <dd safe>{device.lastSeenAt === null ? 'never' : ageText(device.lastSeenAt, view.now)}</dd>
                <dt>Status</dt>
                <dd safe>{device.revokedAt === null ? 'active' : `revoked ${utcText(device.revokedAt)}`}</dd>
              </dl>
              {device.revokedAt === null ? <RevokeForm view={view} device={device} /> : ''}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function RevokeForm({ view, device }: { view: InstallationView; device: Device }) {
  return (
    <form method="post" action={view.links.revoke(view.installationId, device.id)}>
      <FormToken token={view.formToken} />
      <button type="submit" class="danger" aria-label={`Revoke ${device.name ?? 'the device without a name'}`}>
        Revoke
      </button>
    </form>
  );
}

const EXPORTS = [
  ['telemetry', 'csv', 'Samples (CSV)'],
  ['telemetry', 'ndjson', 'Samples (NDJSON)'],
  ['telemetry', 'gpx', 'Track (GPX)'],
  ['consumption', 'csv', 'Consumption per day (CSV)'],
  ['consumption', 'ndjson', 'Consumption per day (NDJSON)'],
  ['sessions', 'csv', 'Charging sessions (CSV)'],
  ['sessions', 'ndjson', 'Charging sessions (NDJSON)'],
] as const;

function Exports({ installationId, links }: { installationId: string; links: DashboardLinks }) {
  return (
    <section aria-labelledby="exports">
      <h2 id="exports">Export</h2>
      <ul class="links">
        {EXPORTS.map(([kind, format, text]) => (
          <li>
            <a href={links.export(installationId, kind, format)}>{text}</a>
          </li>
        ))}
      </ul>
    </section>
  );
}
