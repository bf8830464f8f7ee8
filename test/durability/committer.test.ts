/**
 * The committer's promise: a write is answered only once its group has committed, and what was
 * answered survives a crash of the process (both modes) or of the machine (`full`, by a sync of the WAL).
 */
import { Database } from 'bun:sqlite';
import { describe, expect, spyOn, test } from 'bun:test';
import { fstatSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Committer, WriteError, type CommitterOptions } from '../../src/db/committer.ts';
import { commitGroup, type WriteOp } from '../../src/db/group.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openDatabase } from '../../src/db/open.ts';
import { openStorage } from '../../src/db/storage.ts';
import { WalSync, type SyncFile } from '../../src/db/wal-sync.ts';
import { heldSyncs, tempDir, INSTALLATION, waitUntil, within, type HeldSyncs } from '../support.ts';

const dir = tempDir('ev-ingest-committer-');

const device = (id: string) => ({ id, installationId: INSTALLATION, name: null, tokenHash: id, createdAt: 1 });

function deviceIds(path: string): Set<string> {
  const db = new Database(path, { readonly: true });
  try {
    return new Set(
      db
        .query<{ id: string }, []>('SELECT id FROM devices')
        .all()
        .map((row) => row.id),
    );
  } finally {
    db.close();
  }
}

function integrity(path: string): string {
  const db = new Database(path);
  try {
    return db.query<{ integrity_check: string }, []>('PRAGMA integrity_check').get()!.integrity_check;
  } finally {
    db.close();
  }
}

describe('the writer connection', () => {
  test.each([
    ['full', 1],
    ['fast', 0],
  ] as const)(
    'DURABILITY=%s runs WAL with synchronous=NORMAL on the writer, and %d syncs of its own per commit',
    async (durability, syncsPerCommit) => {
      const storage = await openStorage({ databasePath: join(dir, `pragmas-${durability}.db`), durability });
      try {
        expect(await storage.committer.writerPragma('synchronous')).toEqual([{ synchronous: 1 }]);
        expect(await storage.committer.writerPragma('journal_mode')).toEqual([{ journal_mode: 'wal' }]);
        await storage.committer.write('insertDevice', device('one'));
        await storage.committer.write('insertDevice', device('two'));
        expect(storage.committer.stats).toEqual({ groups: 2, writes: 2, syncs: 2 * syncsPerCommit });
      } finally {
        await storage.close();
      }
    },
  );

  test('the fault seam takes simple pragmas only', async () => {
    const storage = await openStorage({ databasePath: join(dir, 'seam.db'), durability: 'full' });
    try {
      const refused = await storage.committer
        .writerPragma('synchronous = OFF; DROP TABLE devices')
        .catch((error: Error) => error.message);
      expect(refused).toBe('not a simple pragma: synchronous = OFF; DROP TABLE devices');
      expect(await storage.committer.writerPragma('no_such_pragma')).toEqual([]);
      expect(await storage.committer.writerPragma('synchronous')).toEqual([{ synchronous: 1 }]);
    } finally {
      await storage.close();
    }
  });
});

/** Polls `condition` for up to `ms` without giving this thread's event loop a turn; answers whether it came true. */
function cameTrueWhileBusy(condition: () => boolean, ms = 3000): boolean {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) return false;
    Bun.sleepSync(2);
  }
  return true;
}

/** A committer on a fresh database (at `path`, default `<name>.db`); `durability` full unless said otherwise. */
async function committerWith(name: string, options: Partial<CommitterOptions> = {}) {
  const path = options.path ?? join(dir, `${name}.db`);
  const db = openDatabase(path, 'full');
  migrate(db);
  const committer = await Committer.start({ durability: 'full', ...options, path });
  const stop = async () => {
    await committer.close();
    db.close();
  };
  return { path, committer, stop };
}

/** Runs `test` on a committer whose WAL syncs the test finishes by hand; stops it whatever happens. */
async function withHeldSyncs(
  name: string,
  options: Partial<CommitterOptions>,
  test: (opened: { path: string; committer: Committer; syncs: HeldSyncs }) => Promise<void>,
): Promise<void> {
  const syncs = heldSyncs();
  const { path, committer, stop } = await committerWith(name, { ...options, syncFile: syncs.syncFile });
  try {
    await test({ path, committer, syncs });
  } finally {
    syncs.release();
    await stop();
  }
}

/**
 * Hands in writes tick by tick (`ticks`: the ids of each tick) while another connection holds the
 * write lock, so the writer waits in BEGIN with the first group; answers the ordinal of the group
 * that answered each write (read when it is answered: each group's answers must come in a task of
 * their own, as they do without held syncs).
 */
async function groupsBehindABusyWriter(
  path: string,
  committer: Committer,
  ticks: string[][],
): Promise<Record<string, number>> {
  const holder = new Database(path);
  holder.run('BEGIN IMMEDIATE');
  const groupOf: Record<string, number> = {};
  const writes: Promise<unknown>[] = [];
  const before = committer.stats.groups;
  try {
    for (const ids of ticks) {
      for (const id of ids)
        writes.push(
          committer.write('insertDevice', device(id)).then(() => (groupOf[id] = committer.stats.groups - before)),
        );
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    holder.run('COMMIT');
    holder.close();
  }
  await Promise.all(writes);
  return groupOf;
}

/**
 * How many times as long as the first write a slow first sync takes: twice the most any rule here needs
 * (a burst of 32 goes as one group only when its half, 16 writes, is written quicker than a sync).
 */
const SLOW_SYNC_WRITES = 32;

/**
 * A committer that has measured one write and its sync, the sync instant or slow. A slow one lasts
 * SLOW_SYNC_WRITES times as long as the write took from its call to its sync, a span that contains the
 * write time the committer measures: writes are quicker than a sync however loaded the machine. Later
 * syncs are instant: the groups under test are formed on that measurement, before any other sync ends.
 */
async function measuredCommitter(name: string, firstSync: 'instant' | 'slow') {
  let writtenFrom = 0;
  let syncs = 0;
  const syncFile: SyncFile = (_fd, done) => {
    if (firstSync === 'instant' || syncs++ > 0) return done(null);
    setTimeout(() => done(null), SLOW_SYNC_WRITES * (performance.now() - writtenFrom));
  };
  const opened = await committerWith(name, { syncFile });
  writtenFrom = performance.now();
  await opened.committer.write('insertDevice', device(`${name}-first`));
  return opened;
}

describe('FULL durability: the WAL synced apart from the writer', () => {
  test('a write is answered only once a sync of the WAL that began after its commit has finished', async () => {
    await withHeldSyncs('held-sync', {}, async ({ path, committer, syncs }) => {
      const answered: string[] = [];
      const first = committer.write('insertDevice', device('first')).then(() => answered.push('first'));
      await waitUntil(() => syncs.calls.length === 1);
      expect(fstatSync(syncs.calls[0]!.fd).ino).toBe(statSync(`${path}-wal`).ino);
      expect(deviceIds(path)).toEqual(new Set(['first'])); // committed, not yet answered
      const second = committer.write('insertDevice', device('second')).then(() => answered.push('second'));
      // The writer answers in order: a pragma sent after the second group comes back once it committed.
      await new Promise((resolve) => setImmediate(resolve));
      await committer.writerPragma('synchronous');
      expect(deviceIds(path)).toEqual(new Set(['first', 'second']));
      expect(answered).toEqual([]);
      syncs.calls[0]!.finish();
      await first;
      expect(answered).toEqual(['first']); // the first sync began before the second commit
      expect(syncs.calls.length).toBe(2);
      syncs.calls[1]!.finish();
      await second;
      expect(answered).toEqual(['first', 'second']);
    });
  });

  test('close() waits for a sync still running before it stops the writer', async () => {
    await withHeldSyncs('close-held', {}, async ({ committer, syncs }) => {
      const written = committer.write('insertDevice', device('waiting'));
      await waitUntil(() => syncs.calls.length === 1);
      let closed = false;
      const closing = committer.close().then(() => (closed = true));
      await Bun.sleep(20);
      expect(closed).toBe(false);
      syncs.calls[0]!.finish();
      await written;
      await closing;
    });
  });

  test('WalSync closed mid-sync gives waiters one last sync, then closes its file, refusing later calls', async () => {
    const path = join(dir, 'closing-wal');
    writeFileSync(path, 'frames');
    const syncs = heldSyncs();
    const wal = new WalSync(path, syncs.syncFile);
    const first = wal.durable();
    const queued = wal.durable().then(
      () => 'synced',
      (error: Error) => error.name,
    );
    // Whether a sync's descriptor still names the file (once closed, its number may name another).
    const open = () => {
      try {
        return fstatSync(syncs.calls[0]!.fd).ino === statSync(path).ino;
      } catch {
        return false;
      }
    };
    let closed = false;
    const closing = wal.close().then(() => (closed = true));
    expect(
      await wal.durable().then(
        () => 'synced',
        (error: Error) => error.name,
      ),
    ).toBe('WalClosedError');
    syncs.calls[0]!.finish();
    await first;
    await waitUntil(() => syncs.calls.length === 2); // the queued caller's last sync
    expect([open(), closed]).toEqual([true, false]);
    syncs.calls[1]!.finish();
    expect(await queued).toBe('synced');
    await closing;
    expect(open()).toBe(false);
    expect(syncs.calls).toHaveLength(2);
  });

  test('WalSync syncs the WAL and its folder on open: a new WAL and commits left unsynced survive a power cut', () => {
    const folder = join(dir, 'wal-folder');
    mkdirSync(folder);
    writeFileSync(join(folder, 'ev.db-wal'), '');
    const synced: number[] = [];
    const wal = new WalSync(join(folder, 'ev.db-wal'), heldSyncs().syncFile, (fd) => synced.push(fstatSync(fd).ino));
    wal.close();
    expect(synced).toEqual([statSync(folder).ino, statSync(join(folder, 'ev.db-wal')).ino]);
  });

  test('durable(): at once when every write is answered, else after a sync that began after the call', async () => {
    await withHeldSyncs('durable', {}, async ({ committer, syncs }) => {
      await within(committer.durable(), 'durable() with nothing written'); // nothing to wait for, no sync
      expect(syncs.calls).toHaveLength(0);
      const written = committer.write('insertDevice', device('in-flight'));
      await waitUntil(() => syncs.calls.length === 1); // committed, its sync held
      let durable = false;
      const waiting = committer.durable().then(() => (durable = true));
      syncs.calls[0]!.finish();
      await written;
      await Bun.sleep(10);
      expect(durable).toBe(false); // the first sync began before the call
      expect(syncs.calls).toHaveLength(2);
      syncs.calls[1]!.finish();
      await waiting;
      await within(committer.durable(), 'durable() with every write answered again'); // at once
      expect(syncs.calls).toHaveLength(2);
    });
  });

  test('after a failed sync durable() refuses, and no later sync is trusted', async () => {
    await withHeldSyncs('durable-failed', {}, async ({ committer, syncs }) => {
      const written = committer.write('insertDevice', device('lost')).then(
        () => 'answered',
        (error: Error) => error.message,
      );
      await waitUntil(() => syncs.calls.length === 1);
      const waiting = committer.durable().then(
        () => 'durable',
        (error: Error) => error.message,
      );
      syncs.calls[0]!.finish(new Error('EIO'));
      expect(await written).toBe("writer failed: the WAL's sync failed: EIO");
      expect(await waiting).toBe('EIO'); // queued behind the failed sync: refused, not synced again
      expect(syncs.calls).toHaveLength(1);
      expect(
        await committer.durable().then(
          () => 'durable',
          (error: Error) => error.message,
        ),
      ).toBe("writer failed: the WAL's sync failed: EIO");
    });
  });

  test('a symbolic link as database path: the WAL synced is the one SQLite writes, beside the real file', async () => {
    const real = join(dir, 'real');
    mkdirSync(real);
    symlinkSync(join(real, 'linked.db'), join(dir, 'link.db'));
    await withHeldSyncs('link', { path: join(dir, 'link.db') }, async ({ committer, syncs }) => {
      const written = committer.write('insertDevice', device('through-link'));
      await waitUntil(() => syncs.calls.length === 1);
      expect(fstatSync(syncs.calls[0]!.fd).ino).toBe(statSync(join(real, 'linked.db-wal')).ino);
      syncs.calls[0]!.finish();
      await written;
    });
  });

  test('a failed sync fails the writes it covered and every later one, and the writer is reported broken', async () => {
    const { committer, stop } = await committerWith('failed-sync', {
      syncFile: (_fd, done) => done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })),
    });
    const broken: string[] = [];
    committer.onBroken = (error) => broken.push(error.message);
    const expected = "writer failed: the WAL's sync failed: EIO: i/o error, fdatasync";
    const failure = (id: string) =>
      committer.write('insertDevice', device(id)).then(
        () => 'answered',
        (error: Error) => error.message,
      );
    expect(await failure('unsure')).toBe(expected);
    expect(await failure('later')).toBe(expected);
    expect(broken).toEqual([expected]);
    await stop();
  });

  test('DURABILITY=fast never syncs the WAL, not even for durable() (the planner asks it at every read)', async () => {
    const syncs = heldSyncs();
    const { path, committer, stop } = await committerWith('fast-no-sync', {
      durability: 'fast',
      syncFile: syncs.syncFile,
    });
    const other = new Database(path);
    other.run('BEGIN IMMEDIATE'); // holds the write lock: the group stays at the writer, unanswered
    try {
      const writes = Promise.all(['a', 'b', 'c'].map((id) => committer.write('insertDevice', device(id))));
      await waitUntil(() => (committer as unknown as { unanswered: Set<unknown> }).unanswered.size > 0);
      await within(committer.durable(), 'durable() with DURABILITY=fast'); // at once, though a group is under way
      other.run('COMMIT');
      await within(writes, 'the writes with DURABILITY=fast, their syncs held');
      expect(syncs.calls).toEqual([]);
    } finally {
      if (other.inTransaction) other.run('COMMIT');
      other.close();
      syncs.release();
      await stop();
    }
  });

  test('DURABILITY=fast syncs on demand: flush() waits for a sync, a stop for the flushes under way', async () => {
    await withHeldSyncs('fast-flush', { durability: 'fast' }, async ({ committer, syncs }) => {
      const broken: string[] = [];
      committer.onBroken = (error) => void broken.push(error.message);
      await within(committer.write('insertDevice', device('a')), 'a write with DURABILITY=fast, its syncs held');
      expect(syncs.calls).toEqual([]); // the write alone: no sync
      const flushed: string[] = [];
      const first = committer.flush().then(() => void flushed.push('first'));
      const second = committer.flush().then(() => void flushed.push('second')); // behind the first's sync
      let closed = false;
      const closing = committer.close().then(() => (closed = true));
      await Bun.sleep(20);
      expect([syncs.calls.length, flushed, closed]).toEqual([1, [], false]);
      syncs.calls[0]!.finish();
      await waitUntil(() => syncs.calls.length === 2 && flushed.length === 1);
      expect([flushed, closed]).toEqual([['first'], false]);
      syncs.calls[1]!.finish();
      await Promise.all([first, second, closing]);
      expect([flushed, closed, broken]).toEqual([['first', 'second'], true, []]);
      expect(
        await committer.flush().then(
          () => 'flushed',
          (error: Error) => error.message,
        ),
      ).toBe('the WAL is closed');
    });
  });

  test('flushes before the WAL closes all get a sync; one after is refused as closed, not as failed', async () => {
    await withHeldSyncs('fast-flush-stop', { durability: 'fast' }, async ({ committer, syncs }) => {
      const broken: string[] = [];
      committer.onBroken = (error) => void broken.push(error.message);
      // The stop's close of the WAL is held until the test lets it go, however fast the writer stops.
      const closeWal = WalSync.prototype.close;
      let letClose = () => {};
      const walClosed = spyOn(WalSync.prototype, 'close').mockImplementation(function (this: WalSync) {
        return new Promise<void>((resolve) => (letClose = () => resolve(closeWal.call(this))));
      });
      try {
        await within(committer.write('insertDevice', device('a')), 'a write with DURABILITY=fast, its syncs held');
        const first = committer.flush();
        const closing = committer.close();
        await waitUntil(() => walClosed.mock.calls.length === 1); // the writer stopped; the WAL is about to close
        const second = committer.flush(); // as the stop goes on: waits for the next sync
        syncs.calls[0]!.finish(); // the first ends, the second's sync starts
        const third = committer.flush(); // behind the second's sync, before the WAL is closed
        letClose();
        const late = committer.flush(); // after the close
        syncs.release();
        const outcomes = await Promise.all(
          [first, second, third, late].map((flush) =>
            flush.then(
              () => 'synced',
              (error: Error) => error.name,
            ),
          ),
        );
        await closing;
        expect([outcomes, broken]).toEqual([['synced', 'synced', 'synced', 'WalClosedError'], []]);
      } finally {
        walClosed.mockRestore();
      }
    });
  });

  test("one write per group (benchmark baseline) commits and syncs each write itself, as SQLite's FULL", async () => {
    const syncs = heldSyncs();
    const { committer, stop } = await committerWith('lone-commits', { maxGroupWrites: 1, syncFile: syncs.syncFile });
    await within(
      Promise.all(['a', 'b', 'c'].map((id) => committer.write('insertDevice', device(id)))),
      'lone writes, the WAL syncs held',
    );
    expect(await committer.writerPragma('synchronous')).toEqual([{ synchronous: 2 }]);
    expect(syncs.calls).toEqual([]);
    expect(committer.stats).toEqual({ groups: 3, writes: 3, syncs: 0 });
    await stop();
  });

  const burst = (committer: Committer, count: number) =>
    Promise.all(Array.from({ length: count }, (_, n) => committer.write('insertDevice', device(`burst-${n}`))));

  test('a burst whose halves take longer to write than a sync goes as two groups that take turns', async () => {
    const { committer, stop } = await measuredCommitter('halves', 'instant');
    await burst(committer, 32);
    expect(committer.stats).toEqual({ groups: 3, writes: 33, syncs: 3 });
    await stop();
  });

  test('a burst written faster than the disk syncs goes as one group, behind one sync', async () => {
    const { committer, stop } = await measuredCommitter('one-group', 'slow');
    await burst(committer, 32);
    expect(committer.stats).toEqual({ groups: 2, writes: 33, syncs: 2 });
    await stop();
  });
});

describe('the next group', () => {
  test('goes to the busy writer once as large as the group it runs (here without syncs: fast durability)', async () => {
    const { path, committer, stop } = await committerWith('next-group', { durability: 'fast' });
    // a1 and a2 to the idle writer; b1 alone is smaller, so it gathers; with b2 it is as large and goes;
    // c1 and c2 are as large too, but the writer holds two groups already: they gather, and d1 with them.
    const ticks = [['a1', 'a2'], ['b1'], ['b2'], ['c1', 'c2'], ['d1']];
    const groups = await groupsBehindABusyWriter(path, committer, ticks);
    expect(groups).toEqual({ a1: 1, a2: 1, b1: 2, b2: 2, c1: 3, c2: 3, d1: 3 });
    await stop();
  });

  test('FULL: both halves of a burst go to the writer, each answered after a sync begun after its commit', async () => {
    await withHeldSyncs('halves-at-writer', {}, async ({ path, committer, syncs }) => {
      const holder = new Database(path);
      holder.run('BEGIN IMMEDIATE');
      const answered: string[] = [];
      // Nothing measured yet, so the burst is split, the larger half second, so that it goes to the writer too.
      for (const id of ['a', 'b', 'c']) committer.write('insertDevice', device(id)).then(() => answered.push(id));
      await new Promise((resolve) => setImmediate(resolve));
      holder.run('COMMIT');
      holder.close();
      // This thread stays busy, so no group is sent meanwhile: b and c commit only if already at the writer.
      expect(cameTrueWhileBusy(() => deviceIds(path).size === 3)).toBe(true);
      expect(deviceIds(path)).toEqual(new Set(['a', 'b', 'c']));
      await committer.writerPragma('synchronous'); // comes back after both commits have been reported here
      expect(answered).toEqual([]);
      expect(syncs.calls.length).toBe(1); // began after a's commit; b and c wait for the next
      syncs.calls[0]!.finish();
      await waitUntil(() => answered.length === 1);
      expect(answered).toEqual(['a']);
      expect(syncs.calls.length).toBe(2);
      syncs.calls[1]!.finish();
      await waitUntil(() => answered.length === 3);
      expect(answered).toEqual(['a', 'b', 'c']);
      expect(committer.stats).toEqual({ groups: 2, writes: 3, syncs: 2 });
    });
  });

  test('gathers until the group at the writer commits when writes are quicker than a sync', async () => {
    const { path, committer, stop } = await measuredCommitter('gathering', 'slow');
    const groups = await groupsBehindABusyWriter(path, committer, [['a1', 'a2'], ['b1'], ['b2'], ['c1']]);
    expect(groups).toEqual({ a1: 1, a2: 1, b1: 2, b2: 2, c1: 2 });
    await stop();
  });
});

describe('a group', () => {
  test('one failing write in a group rolls back alone; the others commit in the same group', async () => {
    const path = join(dir, 'group.db');
    // fast: under FULL a burst may go as two groups that take turns (above), and this is about one group.
    const storage = await openStorage({ databasePath: path, durability: 'fast' });
    try {
      await storage.committer.write('insertDevice', device('existing'));
      const groupsBefore = storage.committer.stats.groups;
      const results = await Promise.allSettled(
        ['a', 'b', 'existing', 'c'].map((id) => storage.committer.write('insertDevice', device(id))),
      );
      expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      const failure = (results[2] as PromiseRejectedResult).reason;
      expect(failure).toBeInstanceOf(WriteError);
      expect(failure).toMatchObject({ scope: 'write', code: 'SQLITE_CONSTRAINT_UNIQUE' });
      expect(storage.committer.stats.groups - groupsBefore).toBe(1);
      expect([...deviceIds(path)].sort()).toEqual(['a', 'b', 'c', 'existing']);
    } finally {
      await storage.close();
    }
  });

  test('a write that throws after writing leaves none of its rows; its neighbours keep theirs', () => {
    const db = openDatabase(join(dir, 'half.db'), 'full');
    db.run('CREATE TABLE marks (id TEXT PRIMARY KEY)');
    const mark: WriteOp<string> = (db, id) => db.query('INSERT INTO marks (id) VALUES (?)').run(id);
    const ops: Record<string, WriteOp> = {
      mark,
      halfThenFail: (db, id: string) => {
        mark(db, `${id}-1`);
        mark(db, `${id}-2`);
        throw new Error('validation found a problem after writing');
      },
    };
    const outcomes = commitGroup(db, ops, [
      { op: 'mark', args: 'before' },
      { op: 'halfThenFail', args: 'half' },
      { op: 'unknownOp', args: null },
      { op: 'mark', args: 'after' },
    ]);
    expect(outcomes).toEqual([
      { ok: true, value: expect.anything() },
      { ok: false, error: { message: 'validation found a problem after writing', code: undefined, scope: 'write' } },
      { ok: false, error: { message: 'unknown write operation unknownOp', code: undefined, scope: 'write' } },
      { ok: true, value: expect.anything() },
    ]);
    expect(db.query('SELECT id FROM marks ORDER BY id').values()).toEqual([['after'], ['before']]);
    db.close();
  });
});

/** Runs a child script, SIGKILLs it once `killAfter` lines of stdout arrived; answers every line it printed. */
async function killMidway(args: string[], killAfter: number): Promise<string[]> {
  const child = Bun.spawn([process.execPath, ...args], { stdout: 'pipe', stderr: 'inherit' });
  const lines: string[] = [];
  let partial = '';
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    const parts = (partial + decoder.decode(chunk, { stream: true })).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    if (lines.length >= killAfter && !child.killed) child.kill('SIGKILL');
  }
  await child.exited;
  return lines;
}

describe('a crash', () => {
  test('SIGKILL in the middle of a group loses exactly that unanswered group', async () => {
    const path = join(dir, 'mid-group.db');
    const lines = await killMidway([join(import.meta.dir, 'group-crash-child.ts'), path], Infinity);
    expect(lines).toEqual(['first group committed']);
    const db = new Database(path, { readonly: true });
    expect(db.query('SELECT id FROM marks ORDER BY id').values()).toEqual([['first-1'], ['first-2'], ['first-3']]);
    db.close();
    expect(integrity(path)).toBe('ok');
  });

  test.each(['full', 'fast'])(
    'DURABILITY=%s: every write acknowledged before a SIGKILL is there after it (5 kills, one file)',
    async (durability) => {
      const path = join(dir, `kill-${durability}.db`);
      const acknowledged: string[] = [];
      for (let round = 0; round < 5; round++) {
        const lines = await killMidway(
          [join(import.meta.dir, 'committer-child.ts'), path, durability, `r${round}`],
          1 + 50 + Math.floor(Math.random() * 400),
        );
        expect(lines[0]).toBe('ready');
        acknowledged.push(...lines.slice(1));
      }
      const stored = deviceIds(path);
      expect(acknowledged.length).toBeGreaterThan(5 * 50);
      expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
      expect(integrity(path)).toBe('ok');
    },
  );
});
