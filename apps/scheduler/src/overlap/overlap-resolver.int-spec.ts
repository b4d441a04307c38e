import { DEFAULT_PRIORITY_WEIGHTS } from '@chronicle/domain';
import { claimReadyRuns, ReadySignal, RunReservations, TransitionRun, TransitionRunHandler } from '@chronicle/commands';
import { PostgresEventStore } from '@chronicle/event-store';
import { createLogger } from '@chronicle/platform';
import { seedRuns, testJob, createTestDatabase, runDecisions, runServers, type TestDatabase } from '@chronicle/testing';
import { OverlapResolver } from './overlap-resolver';
import { soleNodeScope } from '../shards/shard-ownership';

const POLICIES = ['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'allow_all'] as const;

/**
 * Per policy: fire 1 is leased, and fires 2 and 3 come due while it runs.
 * What the policy decides is read from the log: RunCancelled with its reason.
 */
describe('overlap policies of scheduled jobs', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const reservations = new RunReservations(createLogger('error'));
  const jobs = POLICIES.map((policy) =>
    testJob({
      name: `ops.${policy}`,
      queue: `q-${policy}`,
      schedule: { cron: '* * * * *', timeZone: 'UTC', overlapPolicy: policy },
    }),
  );

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
    const minuteAgo = Date.now() - 60_000;
    await seedRuns(
      db.pool,
      store,
      jobs,
      jobs.flatMap((job) =>
        [1, 2, 3].map((n) => ({
          job,
          runId: `${job.name}-fire-${n}`,
          dueAt: new Date(minuteAgo + n * 1000),
          source: 'schedule' as const,
        })),
      ),
    );
  });
  afterAll(() => db?.drop());

  const claim = (queue: string, max = 10): Promise<string[]> =>
    runDecisions(store, db.pool, reservations)
      .unitOfWork((work) =>
        claimReadyRuns(
          work,
          { kind: 'worker', team: 'ops', queues: [queue] },
          { queues: [queue], max, leaseSeconds: 60, workerId: 'w' },
          DEFAULT_PRIORITY_WEIGHTS,
        ),
      )
      .then(({ leases }) => leases.map((l) => l.runId.replace(/^ops\.[a-z_]+-/, '')));
  const cancelled = async (policy: string): Promise<Array<[string, string, string]>> =>
    (
      await db.pool.query<{ fire: string; reason: string; detail: string }>(
        `SELECT substring(es_stream_name(stream_key) from 'fire-[0-9]') AS fire, data->>'reason' AS reason, data->>'detail' AS detail FROM events
          WHERE event_type = 'RunCancelled' AND es_stream_name(stream_key) LIKE $1 ORDER BY 1`,
        [`run-ops.${policy}-%`],
      )
    ).rows.map((r) => [r.fire, r.reason, r.detail]);
  const complete = async (policy: string, fire: string): Promise<void> => {
    const { rows } = await db.pool.query<{ token: number }>(
      `SELECT fencing_token::int AS token FROM runs WHERE run_id = $1`,
      [`ops.${policy}-${fire}`],
    );
    const transitions = new TransitionRunHandler(
      { now: () => new Date() },
      new ReadySignal(),
      runServers(store, db.pool, runDecisions(store, db.pool, reservations)),
    );
    await transitions.execute(
      new TransitionRun({ kind: 'worker', team: 'ops', queues: [`q-${policy}`] }, `ops.${policy}-${fire}`, (now) => ({
        type: 'CompleteRun',
        fencingToken: rows[0]!.token,
        outcome: 'success',
        error: null,
        retryable: true,
        now,
        draw: 0,
      })),
    );
  };

  beforeAll(async () => {
    // Fire 1 of every job is leased first (a claim of one takes the oldest).
    for (const policy of POLICIES) expect(await claim(`q-${policy}`, 1)).toEqual(['fire-1']);
    await new OverlapResolver(
      runServers(store, db.pool, runDecisions(store, db.pool, reservations)),
      db.pool,
    ).resolveOnce(await soleNodeScope(db.pool));
  });

  it('skip: the fires due while fire 1 runs are skipped, each saying why', async () => {
    expect(await cancelled('skip')).toEqual([
      ['fire-2', 'overlap_skipped', 'overlapPolicy skip: run ops.skip-fire-1 was still running'],
      ['fire-3', 'overlap_skipped', 'overlapPolicy skip: run ops.skip-fire-1 was still running'],
    ]);
    expect(await claim('q-skip')).toEqual([]);
  });

  it('buffer_one: one fire waits for fire 1 to finish, the next is skipped', async () => {
    expect(await cancelled('buffer_one')).toEqual([
      [
        'fire-3',
        'overlap_skipped',
        'overlapPolicy buffer_one: one fire already waits for run ops.buffer_one-fire-1 to finish',
      ],
    ]);
    expect(await claim('q-buffer_one')).toEqual([]);
    await complete('buffer_one', 'fire-1');
    expect(await claim('q-buffer_one')).toEqual(['fire-2']);
  });

  it('buffer_all: every fire waits its turn, one at a time', async () => {
    expect(await cancelled('buffer_all')).toEqual([]);
    expect(await claim('q-buffer_all')).toEqual([]);
    await complete('buffer_all', 'fire-1');
    expect(await claim('q-buffer_all')).toEqual(['fire-2']);
    await complete('buffer_all', 'fire-2');
    expect(await claim('q-buffer_all')).toEqual(['fire-3']);
  });

  it('cancel_other: the newest fire supersedes the running one, the fire between is skipped', async () => {
    expect(await cancelled('cancel_other')).toEqual([
      [
        'fire-1',
        'overlap_superseded',
        'overlapPolicy cancel_other: superseded by the newer fire ops.cancel_other-fire-3',
      ],
      ['fire-2', 'overlap_skipped', 'overlapPolicy cancel_other: a newer fire replaces this one'],
    ]);
    expect(await claim('q-cancel_other')).toEqual(['fire-3']);
    // The superseded run's worker finds its lease gone.
    await expect(complete('cancel_other', 'fire-1')).rejects.toMatchObject({ code: 'stale-lease' });
  });

  it('allow_all: the fires run side by side', async () => {
    expect(await cancelled('allow_all')).toEqual([]);
    expect((await claim('q-allow_all')).sort()).toEqual(['fire-2', 'fire-3']);
  });
});
