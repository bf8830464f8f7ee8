/**
 * Child process of the migration race tests: opens the database as the service does, says so on
 * stdout with its connection's busy timeout, and migrates it; a failure ends it with status 1 and its
 * reason on stderr.
 * Usage: bun migrate-child.ts DATABASE_PATH
 */
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';

const [path] = process.argv.slice(2) as [string];
const db = openDatabase(path, 'full');
process.stdout.write(
  `busy_timeout=${db.query<{ timeout: number }, []>('PRAGMA busy_timeout').get()!.timeout}\nopened\n`,
);
migrate(db);
db.close();
