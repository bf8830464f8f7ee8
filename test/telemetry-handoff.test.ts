import { describe, expect, test } from 'bun:test';
import { validateBatch } from '../src/telemetry/model.ts';
import { sampleWrite } from '../src/telemetry/store.ts';
import { consumptionChunk, countSamples, INSTALLATION, OTHER_INSTALLATION, startTestService } from './support.ts';
import {
  NOW_MS,
  UTC,
  recordingForwarder,
  service,
  handOff,
  useTelemetryService,
  freshInstallation,
  post,
  rowsOf,
} from './telemetry-support.ts';

useTelemetryService();

describe('hand-off to the planner forwarder', () => {
  test('only installations with stored samples for the planner are handed off, after the commit', async () => {
    handOff.stored.length = 0;
    const usable = freshInstallation();
    const unusable = freshInstallation();
    const empty = freshInstallation();
    const alreadySent = freshInstallation();
    const notForwarded = freshInstallation();
    handOff.forwarded.push(usable, unusable, empty, alreadySent);
    await post({ installationId: unusable, samples: [{ utc: UTC, soc: 500 }, 7] });
    await post({ installationId: empty, samples: [] });
    await post({ installationId: alreadySent, plannerSentUtc: UTC, samples: [{ utc: UTC, soc: 5 }] });
    await post({ installationId: notForwarded, samples: [{ utc: UTC, soc: 5 }] });
    await post({ installationId: usable.toUpperCase(), samples: [{ utc: UTC, soc: 5 }, { soc: 1 }] });
    expect(handOff.stored).toEqual([usable]);
  });

  test('a waiting sample sent again after the car gave it to the planner itself stops waiting', async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    const samples = [
      { utc: UTC, soc: 70 },
      { utc: UTC + 1, soc: 71 },
      { utc: UTC + 2, soc: 72 },
    ];
    await post({ installationId, samples });
    await post({ installationId, plannerSentUtc: UTC + 1, samples });
    expect(rowsOf(installationId).map((row) => [row.utc, row.planner_state])).toEqual([
      [UTC, 0],
      [UTC + 1, 0],
      [UTC + 2, 1],
    ]);
  });

  test("a waiting sample at exactly a later batch's plannerSentUtc stops waiting, though not repeated", async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    await post({
      installationId,
      samples: [
        { utc: UTC, soc: 70 },
        { utc: UTC + 1, soc: 71 },
      ],
    });
    handOff.changes.length = 0;
    await post({ installationId, plannerSentUtc: UTC + 1, samples: [{ utc: UTC + 2, soc: 72 }] });
    expect(rowsOf(installationId).map((row) => [row.utc, row.planner_state])).toEqual([
      [UTC, 1], // older: the car has not said the planner has it
      [UTC + 1, 0],
      [UTC + 2, 1],
    ]);
    expect(handOff.changes.map(({ added, rewritten }) => ({ utcs: added.map((row) => row[0]), rewritten }))).toEqual([
      { utcs: [UTC + 2], rewritten: true },
    ]);
  });

  test('the hand-off carries the samples the batch made pending, oldest first, or says it rewrote some', async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    const handedOff = async (body: Record<string, unknown>) => {
      handOff.changes.length = 0;
      expect((await post({ installationId, ...body })).status).toBe(200);
      return handOff.changes.map(({ added, rewritten }) => ({ utcs: added.map((row) => row[0]), rewritten }));
    };
    const samples = [
      { utc: UTC + 2, soc: 72 },
      { utc: UTC, soc: 70 },
      { utc: UTC + 1, soc: 71 },
    ];
    expect(await handedOff({ samples })).toEqual([{ utcs: [UTC, UTC + 1, UTC + 2], rewritten: false }]);
    expect(handOff.changes[0]!.added[0]!.slice(0, 2)).toEqual([UTC, 70]); // utc, then the field table's columns
    // Still waiting (nothing sends them here): sent again, perhaps with new values, they are rewritten.
    expect(await handedOff({ samples: [...samples, { utc: UTC + 3, soc: 73 }] })).toEqual([
      { utcs: [UTC + 3], rewritten: true },
    ]);
    expect(await handedOff({ plannerSentUtc: UTC + 3, samples })).toEqual([{ utcs: [], rewritten: true }]);
    // No longer waiting: a copy changes nothing, and nothing is handed off, whatever its plannerSentUtc.
    expect(await handedOff({ samples })).toEqual([]);
    expect(await handedOff({ plannerSentUtc: UTC + 3, samples })).toEqual([]);
  });

  test('of two copies committed in one group, the first makes the samples pending and the second nothing', async () => {
    // fast: under FULL a burst may go as two groups that take turns (test/durability/committer.test.ts).
    const fast = await startTestService({ durability: 'fast' }, { now: () => NOW_MS });
    try {
      const installationId = freshInstallation();
      const rows = validateBatch(
        {
          installationId,
          samples: [
            { utc: UTC, soc: 1 },
            { utc: UTC + 1, soc: 2 },
          ],
        },
        NOW_MS,
      ).rows;
      const write = () => fast.storage.committer.write('storeSamples', sampleWrite(installationId, 0, true, rows));
      const outcomes = await Promise.all([write(), write()]); // handed in during one tick: one group
      expect(fast.storage.committer.stats).toEqual({ groups: 1, writes: 2, syncs: 0 });
      expect(outcomes).toEqual([
        { added: [0, 1], rewritten: false },
        { added: [], rewritten: true }, // the copy finds them waiting
      ]);
      const states = fast.storage.db
        .query<{ planner_state: number }, []>('SELECT planner_state FROM samples ORDER BY utc')
        .all();
      expect(states.map((row) => row.planner_state)).toEqual([1, 1]);
    } finally {
      await fast.close();
    }
  });

  test("a batch's first sample is handed off even when the write before, in another table, had its rowid", async () => {
    // A fresh database: the consumption write leaves last_insert_rowid at 1, the first sample's rowid is 1 too.
    const recorder = recordingForwarder([INSTALLATION]);
    const fresh = await startTestService({}, { now: () => NOW_MS, forwarder: recorder.forwarder });
    try {
      expect((await fresh.request('PUT', '/v1/consumption/daily', { body: consumptionChunk() })).status).toBe(204);
      const batch = { installationId: INSTALLATION, samples: [{ utc: UTC, soc: 50 }] };
      expect((await fresh.request('POST', '/v1/telemetry', { body: batch })).status).toBe(200);
      expect(recorder.changes.map(({ added }) => added.map((row) => row[0]))).toEqual([[UTC]]);
    } finally {
      await fresh.close();
    }
  });

  test('not handed off when validation, ownership or the write fails', async () => {
    const installationId = freshInstallation();
    handOff.forwarded.push(installationId);
    handOff.stored.length = 0;
    const samples = [{ utc: UTC, soc: 5 }];
    expect((await post({ installationId: 'nope', samples })).status).toBe(400);
    const { token } = await service.devices.pair(OTHER_INSTALLATION, null);
    expect((await post({ installationId, samples }, token)).status).toBe(403);

    const { committer } = service.storage;
    const write = committer.write;
    committer.write = (() => Promise.reject(new Error('disk I/O error'))) as typeof committer.write;
    try {
      expect(await post({ installationId, samples })).toEqual({
        status: 500,
        body: { error: 'internal server error' },
      });
    } finally {
      committer.write = write;
    }
    expect(handOff.stored).toEqual([]);
    expect(countSamples(service, installationId)).toBe(0);
  });

  const stateCases: [string, boolean, number | undefined, number[]][] = [
    ['forwarding off: nothing pending', false, UTC + 1, [0, 0, 0]],
    ['forwarding on, plannerSentUtc absent: all pending', true, undefined, [1, 1, 1]],
    ['forwarding on, plannerSentUtc 0: all pending', true, 0, [1, 1, 1]],
    ['forwarding on: only samples after plannerSentUtc pending', true, UTC + 1, [0, 0, 1]],
  ];

  test.each(stateCases)('%s', async (_name, forward, plannerSentUtc, states) => {
    const installationId = freshInstallation();
    if (forward) handOff.forwarded.push(installationId);
    const samples = [0, 1, 2].map((offset) => ({ utc: UTC + offset, soc: 50 }));
    expect((await post({ installationId, plannerSentUtc, samples })).status).toBe(200);
    expect(rowsOf(installationId).map((row) => row.planner_state)).toEqual(states);
  });
});
