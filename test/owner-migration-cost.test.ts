/** The owner data's migration reads a database's samples once: its backfill finds each newest utc through the key. */
import { expect, test } from 'bun:test';
import { join } from 'node:path';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';
import { MIGRATIONS, OWNER_DATA } from './owner-support.ts';
import { tempDir } from './support.ts';

test('its backfill walks the key back once per installation and aggregates the samples in one pass', () => {
  const db = openDatabase(join(tempDir(), 'ev-ingest.db'), 'fast');
  migrate(db, MIGRATIONS.slice(0, OWNER_DATA));
  const plans: string[][] = [];
  for (const part of MIGRATIONS[OWNER_DATA]!.sql) {
    if (/^\s*(--[^\n]*\n\s*)*(UPDATE|INSERT)/.test(part)) {
      const plan = db.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${part}`).all();
      // How the subquery is held (co-routine or table) depends on the data, not on what is read.
      const held = /^(CO-ROUTINE|MATERIALIZE|SCAN counts)/;
      plans.push(plan.map((row) => row.detail).filter((detail) => !held.test(detail)));
    }
    db.run(part);
  }
  expect(plans).toEqual([
    // ORDER BY utc DESC LIMIT 1 on the key: no sort, the walk stops at the installation's newest sample.
    [
      'SCAN installations',
      'CORRELATED SCALAR SUBQUERY 1',
      'SCAN samples USING COVERING INDEX sqlite_autoindex_samples_1',
    ],
    ['SCAN samples', 'USE TEMP B-TREE FOR GROUP BY', 'SEARCH installations USING INTEGER PRIMARY KEY (rowid=?)'],
  ]);
  db.close();
});
