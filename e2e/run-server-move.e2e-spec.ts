import { ApiModule } from '@chronicle/api';
import { runSlot } from '@chronicle/commands';
import { ProjectorModule } from '@chronicle/projector';
import { SchedulerModule } from '@chronicle/scheduler';
import { createTestDatabase, type TestDatabase, waitFor } from '@chronicle/testing';
import { startPostgresServers, type PostgresServers } from '../test/postgres-servers';
import type { ApiClient } from './support/api-client';
import { buildDist } from './support/build-dist';
import { chronicle } from './support/chronicle-cli';
import { column, jobOfShard } from './support/run-servers';
import { startApp, type RunningApp } from './support/start-app';
import { createTeam } from './support/team-tokens';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const SHARDS = 4;
const MOVED = 0;

interface Lease {
  runId: string;
  job: string;
  fencingToken: number;
}

/**
 * `chronicle shards move` while runs flow: shard 0 from the first of two servers to the second, a
 * producer enqueueing runs of every shard and three workers leasing and completing them throughout.
 * Nothing is lost, no lease is given twice, the pause is reported, and the source keeps nothing of
 * the shard.
 */
describe('moving a shard to another server while runs flow', () => {
  let servers: PostgresServers;
  let db: TestDatabase;
  let app: RunningApp;
  let team: ApiClient;
  let worker: ApiClient;
  /** A job of each shard: shards 0 and 2 on the first server, 1 and 3 on the second. */
  const jobs = Array.from({ length: SHARDS }, (_, shard) => jobOfShard(shard, SHARDS));
  const name = (port: number): string => `127.0.0.1:${port}/postgres`;

  beforeAll(async () => {
    await buildDist();
    servers = await startPostgresServers({ primaries: 2 });
    db = await createTestDatabase();
    app = await startApp(
      db.pool,
      db.eventStore,
      [ApiModule, ProjectorModule, SchedulerModule],
      ADMIN_TOKEN,
      undefined,
      {
        RUN_SHARD_URLS: servers.primaries.map((s) => s.url).join(','),
        SHARDS: String(SHARDS),
      },
    );
    ({ team, worker } = await createTeam(app.url, ADMIN_TOKEN, 'billing', ['billing']));
    for (const job of jobs)
      expect((await team.put(`/v1/jobs/${job}`, { queue: 'billing', timeoutSeconds: 600 })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await servers?.close();
  });

  it('loses no run, leases none twice, reports the pause and leaves nothing of the shard behind', async () => {
    const [source, target] = servers.primaries;
    const accepted = new Set<string>();
    const leases: Lease[] = [];
    const refused = { enqueue: 0, complete: 0 };
    let producing = true;
    let working = true;

    // A batch of one run of each job every 20 ms. One refused (its moved shard's part paused) is sent again
    // as it was: its runs' idempotency keys make the runs the servers that answered took the same runs.
    const producer = (async () => {
      for (let i = 0; ;) {
        const response = await team.post<{ runs: Array<{ runId: string }> }>('/v1/runs:batch', {
          runs: jobs.map((job) => ({ job, payload: { i }, idempotencyKey: `batch-${i}` })),
        });
        if (response.status === 200) {
          for (const run of response.body.runs) accepted.add(run.runId);
          i++;
          if (!producing) break;
        } else {
          expect(response.status).toBe(503);
          expect(response.body).toMatchObject({ type: '/problems/shard-unavailable' });
          refused.enqueue++;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    // Each completes what it leased; a completion refused while its run's shard moves is sent again.
    const workers = Array.from({ length: 3 }, async () => {
      while (working) {
        const leased = (
          await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max: 10, waitSeconds: 1 })
        ).body.leases;
        leases.push(...leased);
        for (const lease of leased)
          await waitFor(
            async () => {
              const done = await worker.post(`/v1/runs/${lease.runId}/complete`, {
                fencingToken: lease.fencingToken,
                outcome: 'success',
              });
              if (done.status === 503) refused.complete++;
              else if (done.status !== 200)
                throw new Error(`the completion of ${lease.runId}: ${done.status} ${JSON.stringify(done.body)}`);
              return done.status === 200;
            },
            { timeoutMs: 15_000, pollMs: 100, description: `the completion of ${lease.runId}` },
          );
      }
    });

    await waitFor(async () => leases.length >= 100, { timeoutMs: 20_000, description: 'the load under way' });
    const moved = await chronicle(['shards', 'move', String(MOVED), name(target!.port), '--json'], {
      DATABASE_URL: db.url,
      SHARDS: String(SHARDS),
      EVENT_STORE_URL: undefined,
      EVENT_STORE: undefined,
    });
    expect(moved.code).toBe(0);
    const report = JSON.parse(moved.stdout) as {
      shard: number;
      from: string;
      to: string;
      epoch: number;
      streams: number;
      events: number;
      pauseMs: number;
      verified: { streams: number; events: number; runs: number };
      removed: { events: number; runs: number };
    };
    expect(report).toMatchObject({ shard: MOVED, from: name(source!.port), to: name(target!.port), epoch: 2 });
    expect(report.streams).toBeGreaterThan(0);
    expect(report.verified.events).toBe(report.events);
    expect(report.removed.events).toBe(report.events);
    expect(report.pauseMs).toBeLessThan(5_000);
    // The load went through the fence: the moved shard's enqueues were refused for a moment, then taken.
    expect(refused.enqueue).toBeGreaterThan(0);
    // Runs of the moved shard made after the move, on the target.
    const after = leases.length;
    await waitFor(async () => leases.length >= after + 100, { timeoutMs: 20_000, description: 'the load after' });
    producing = false;
    await producer;
    await waitFor(
      async () =>
        (
          await Promise.all(
            servers.primaries.map((s) =>
              column(s.url, "SELECT count(*)::int AS v FROM runs WHERE queue = 'billing' AND state <> 'succeeded'"),
            ),
          )
        ).every(([n]) => n === 0),
      { timeoutMs: 30_000, description: 'every run succeeded' },
    );
    working = false;
    await Promise.all(workers);

    // The map places the shard on the target, and neither server holds it as moving.
    expect(
      (await db.pool.query('SELECT server, epoch::int, moving_to FROM shard_map WHERE shard = $1', [MOVED])).rows,
    ).toEqual([{ server: name(target!.port), epoch: 2, moving_to: null }]);
    for (const server of servers.primaries) {
      expect(await column(server.url, 'SELECT shard AS v FROM moving_shards')).toEqual([]);
      // A minute's counts are where something was counted: none left at zero by the counts taken away.
      expect(
        await column(
          server.url,
          'SELECT count(*)::int AS v FROM run_activity_minutes WHERE leased + succeeded + failed + lease_expired + dead = 0',
        ),
      ).toEqual([0]);
    }

    // Nothing lost: every run accepted is on its shard's server now, run and stream, and succeeded there.
    const onServer = await Promise.all(
      servers.primaries.map((s) =>
        column(s.url, "SELECT run_id AS v FROM runs WHERE queue = 'billing' AND state = 'succeeded'"),
      ),
    );
    expect(onServer.flat().sort()).toEqual([...accepted].sort());
    const ofMovedShard = (id: unknown): boolean => runSlot(id as string)! % SHARDS === MOVED;
    const movedRuns = onServer[1]!.filter(ofMovedShard) as string[];
    expect(movedRuns.length).toBeGreaterThan(report.streams);
    expect(onServer[0]!.filter(ofMovedShard)).toEqual([]);
    expect(
      await column(
        source!.url,
        'SELECT count(*)::int AS v FROM events WHERE es_stream_name(stream_key) = ANY($1::text[])',
        [movedRuns.map((id) => `run-${id}`)],
      ),
    ).toEqual([0]);

    // No lease given twice: each (run, fencing token) once, and every run's stream, wherever it was
    // written, leased and succeeded in turn, its last lease the one that succeeded.
    expect(new Set(leases.map((l) => `${l.runId}/${l.fencingToken}`)).size).toBe(leases.length);
    const streams = new Map<string, string[]>();
    for (const server of servers.primaries)
      for (const row of (await column(
        server.url,
        `SELECT json_build_object('s', es_stream_name(stream_key), 't', event_type) AS v FROM events
          WHERE es_stream_name(stream_key) = ANY($1::text[]) ORDER BY stream_key, stream_revision`,
        [[...accepted].map((id) => `run-${id}`)],
      )) as Array<{ s: string; t: string }>)
        streams.set(row.s, [...(streams.get(row.s) ?? []), row.t]);
    expect(streams.size).toBe(accepted.size);
    for (const [stream, types] of streams) {
      expect({ stream, types: types.filter((t) => t !== 'LeaseExtended') }).toEqual({
        stream,
        types: ['RunScheduled', 'RunLeased', 'RunSucceeded'],
      });
    }
    // The counts follow the runs: over both servers, each success counted once.
    const succeeded = await Promise.all(
      servers.primaries.map((s) =>
        column(s.url, "SELECT coalesce(sum(succeeded), 0)::int AS v FROM run_activity_minutes WHERE queue = 'billing'"),
      ),
    );
    expect(succeeded.flat().reduce((a, b) => (a as number) + (b as number), 0)).toBe(accepted.size);
    // A run of the moved shard made before the move answers from the target, its whole history there.
    const early = [...accepted].find((id) => movedRuns.includes(id))!;
    const page = await team.get<{ state: string }>(`/v1/runs/${early}`);
    expect(page.status).toBe(200);
    expect(page.body.state).toBe('succeeded');
  }, 180_000);
});
