/**
 * The owner data's migration on a database of the version before: the facts of the samples it holds
 * are carried into the new columns and table.
 */
import { expect, test } from 'bun:test';
import { join } from 'node:path';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';
import { PlannerState } from '../src/telemetry/table.ts';
import { MIGRATIONS, OWNER_DATA } from './owner-support.ts';
import { INSTALLATION, OTHER_INSTALLATION, tempDir } from './support.ts';

test('installations get their newest utc, planner_status the sent and given-up counts and the newest sent utc', () => {
  const db = openDatabase(join(tempDir(), 'ev-ingest.db'), 'fast');
  migrate(db, MIGRATIONS.slice(0, OWNER_DATA));
  db.run(`INSERT INTO installations (id, uuid) VALUES (1, '${INSTALLATION}'), (2, '${OTHER_INSTALLATION}')`);
  const insert = db.query('INSERT INTO samples (installation, utc, soc, planner_state) VALUES (?, ?, 50, ?)');
  const { sent, givenUp, pending, none } = PlannerState;
  for (const [installation, utc, state] of [
    [1, 100, sent],
    [1, 101, givenUp],
    [1, 102, sent],
    [1, 103, pending],
    [2, 200, none],
  ]) {
    insert.run(installation!, utc!, state!);
  }
  migrate(db);
  expect(
    db
      .query('SELECT uuid, latest_utc AS latestUtc, latest_received_at AS receivedAt FROM installations ORDER BY id')
      .all(),
  ).toEqual([
    { uuid: INSTALLATION, latestUtc: 103, receivedAt: null },
    { uuid: OTHER_INSTALLATION, latestUtc: 200, receivedAt: null },
  ]);
  expect(db.query('SELECT * FROM planner_status').all()).toEqual([
    {
      installation_id: INSTALLATION,
      sent: 2,
      given_up: 1,
      last_sent_at: null,
      last_sent_utc: 102,
      last_failure_at: null,
      last_failure_status: null,
      last_failure_error: null,
      last_failure_attempt: null,
    },
  ]);
  db.close();
});
