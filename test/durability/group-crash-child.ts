/**
 * Child process of the mid-group crash test: commits one group, then dies by SIGKILL inside the
 * third write of a second group, after two writes of that group have run.
 * Usage: bun group-crash-child.ts DATABASE_PATH
 */
import { commitGroup, type WriteOp } from '../../src/db/group.ts';
import { openDatabase } from '../../src/db/open.ts';

const db = openDatabase(process.argv[2]!, 'full');
db.run('CREATE TABLE IF NOT EXISTS marks (id TEXT PRIMARY KEY)');
const ops: Record<string, WriteOp> = {
  mark: (db, id: string) => db.query('INSERT INTO marks (id) VALUES (?)').run(id),
  die: () => process.kill(process.pid, 'SIGKILL'),
};
commitGroup(
  db,
  ops,
  [1, 2, 3].map((n) => ({ op: 'mark', args: `first-${n}` })),
);
process.stdout.write('first group committed\n');
commitGroup(db, ops, [
  { op: 'mark', args: 'second-1' },
  { op: 'mark', args: 'second-2' },
  { op: 'die', args: null },
  { op: 'mark', args: 'second-3' },
]);
process.stdout.write('still alive\n');
