import { Registry } from 'prom-client';
import {
  claimReadyRuns,
  defineNewJobs,
  RunLog,
  RunMetrics,
  RunServers,
  scheduledRunId,
  shardOf,
} from '@chronicle/commands';
import { DEFAULT_PRIORITY_WEIGHTS, type JobDefinition, runStreamId } from '@chronicle/domain';
import { RunServerDirectory } from '@chronicle/event-store';
import { createLogger, loadConfig } from '@chronicle/platform';
import { createTestDatabase, runDecisions, seedRuns, testJob, type TestDatabase } from '@chronicle/testing';
import { Materialiser } from '../materialiser/materialiser';
import { LeaseReaper } from '../reaper/lease-reaper';
import { ShardFencedError } from './shard-fence';
import { soleNodeScope, type ShardScope } from './shard-ownership';

const config = loadConfig({});
/** 12:59:30 UTC, with the 13:00 fire time inside the 60 s lookahead. */
const beforeTheHour = new Date('2026-06-01T12:59:30Z');

/** The first `count` jobs named `prefix-<i>` whose shard is even (`even`) or odd. */
const jobsOn = (prefix: string, even: boolean, count: number): JobDefinition[] =>
  Array.from({ length: 100 }, (_, i) => `ops.${prefix}-${i}`)
    .filter((name) => shardOf(name, config.shards) % 2 === (even ? 0 : 1))
    .slice(0, count)
    .map((name) => testJob({ name, schedule: { cron: '0 * * * *', timeZone: 'UTC', jitterSeconds: 0 } }));

/**
 * The scheduler's passes with runs on two servers (docs/sharding.md): the control database keeps the
 * jobs, their cursors, the shard leases and the even shards' runs; a second database, server `b`, the
 * odd shards' runs.
 */
describe('the scheduler over two run servers', () => {
  let control: TestDatabase;
  let b: TestDatabase;
  let servers: RunServers;
  let scope: ShardScope;

  beforeAll(async () => {
    [control, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    const shards = Array.from({ length: config.shards }, (_, shard) => shard);
    const logger = createLogger('error');
    const connection = (name: string, db: TestDatabase, even: boolean) => ({
      name,
      url: db.url,
      shards: shards.filter((shard) => shard % 2 === (even ? 0 : 1)),
      arriving: [],
      pool: db.pool,
      eventStore: db.eventStore,
      close: async () => undefined,
    });
    servers = new RunServers(
      RunServerDirectory.fixed(config, [connection('control', control, true), connection('b', b, false)]),
      config,
      control.pool,
      control.eventStore,
      runDecisions(control.eventStore, control.pool),
      new RunLog(logger),
      logger,
    );
    scope = await soleNodeScope(control.pool, config.shards);
  });
  afterAll(() => Promise.all([control?.drop(), b?.drop()]));

  const runsOf = async (db: TestDatabase): Promise<string[]> =>
    (await db.pool.query<{ job: string }>('SELECT job FROM runs ORDER BY job')).rows.map((r) => r.job);

  it("materialises each job's runs on its shard's server and moves every cursor in the control database", async () => {
    const here = jobsOn('here', true, 3);
    const there = jobsOn('there', false, 3);
    await control.eventStore.unitOfWork(control.pool, (uow) => defineNewJobs(uow, [...here, ...there], 'test'));
    const { rows: before } = await control.pool.query('SELECT * FROM schedule_cursors ORDER BY job');
    const materialiser = new Materialiser(servers, control.pool, { now: () => beforeTheHour });

    expect(await materialiser.materialiseOnce(scope)).toBe(6);
    expect(await runsOf(control)).toEqual(here.map((j) => j.name));
    expect(await runsOf(b)).toEqual(there.map((j) => j.name));
    const { rows: cursors } = await control.pool.query<{ through: Date | null }>(
      'SELECT materialised_through AS through FROM schedule_cursors',
    );
    // Each through the lookahead's end, whichever server its runs went to.
    expect(cursors.map((c) => c.through?.toISOString())).toEqual(Array(6).fill('2026-06-01T13:00:30.000Z'));

    // The cursors put back: the runs are found on their servers, and none is made twice.
    for (const { job, materialised_through, next_fire_at } of before)
      await control.pool.query(
        'UPDATE schedule_cursors SET materialised_through = $2, next_fire_at = $3 WHERE job = $1',
        [job, materialised_through, next_fire_at],
      );
    expect(await materialiser.materialiseOnce(scope)).toBe(0);
    expect(await runsOf(b)).toEqual(there.map((j) => j.name));
  });

  it("reaps an expired lease on its run's server, fenced by the shard leases of the control database", async () => {
    const [job] = jobsOn('reaped', false, 1).map((j) => ({ ...j, queue: 'q-reaped' }));
    const runId = scheduledRunId(job!.name, new Date(Date.now() - 60_000));
    expect(servers.ofRun(runId).name).toBe('b');
    // The job's copy on server b (the claim reads it), and its run.
    await seedRuns(b.pool, b.eventStore, [job!], [{ job: job!, runId, dueAt: new Date(Date.now() - 60_000) }]);
    const { leases } = await servers
      .ofRun(runId)
      .decisions.unitOfWork((work) =>
        claimReadyRuns(
          work,
          { kind: 'worker', team: job!.team, queues: ['q-reaped'] },
          { queues: ['q-reaped'], max: 1, leaseSeconds: 1, workerId: 'w' },
          DEFAULT_PRIORITY_WEIGHTS,
        ),
      );
    expect(leases.map((l) => l.runId)).toEqual([runId]);
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    const reaper = new LeaseReaper(servers, control.pool, new RunMetrics(new Registry()));
    // Under epochs the shards' leases no longer have: refused, and nothing written on b.
    const stale = { ...scope, leases: scope.leases.map((l) => ({ ...l, epoch: l.epoch + 1 })) };
    await expect(reaper.reapOnce(stale)).rejects.toBeInstanceOf(ShardFencedError);
    expect((await b.pool.query('SELECT state FROM runs WHERE run_id = $1', [runId])).rows).toEqual([
      { state: 'leased' },
    ]);

    expect(await reaper.reapOnce(scope)).toBe(1);
    const { rows } = await b.log.query<{ event_type: string }>(
      'SELECT event_type FROM events WHERE stream_key = es_stream_key($1) ORDER BY stream_revision',
      [runStreamId(runId)],
    );
    expect(rows.map((r) => r.event_type)).toContain('LeaseExpired');
  });
});
