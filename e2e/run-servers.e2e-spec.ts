import { ApiModule } from '@chronicle/api';
import { shardOf } from '@chronicle/commands';
import { ProjectorModule } from '@chronicle/projector';
import { createTestDatabase, type TestDatabase, waitFor } from '@chronicle/testing';
import { startPostgresServers, type PostgresServers } from '../test/postgres-servers';
import { apiClient, type ApiClient } from './support/api-client';
import { column, jobOfShard } from './support/run-servers';
import { startApp, type RunningApp } from './support/start-app';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const SHARDS = 4;

interface Lease {
  runId: string;
  job: string;
  fencingToken: number;
}

/**
 * Runs kept on three PostgreSQL servers (RUN_SHARD_URLS), the definitions in the control database: each
 * run, its events and its rows on its job's shard's server, and the worker protocol over all of them.
 */
describe('runs on several PostgreSQL servers', () => {
  let servers: PostgresServers;
  let db: TestDatabase;
  let app: RunningApp;
  let admin: ApiClient;
  let team: ApiClient;
  let teamToken: string;
  let worker: ApiClient;
  /** A job of each shard: shard s is on server s mod 3. */
  const jobs = Array.from({ length: SHARDS }, (_, shard) => jobOfShard(shard, SHARDS));

  beforeAll(async () => {
    servers = await startPostgresServers({ primaries: 3 });
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], ADMIN_TOKEN, undefined, {
      RUN_SHARD_URLS: servers.primaries.map((s) => s.url).join(','),
      SHARDS: String(SHARDS),
    });
    admin = apiClient(app.url, ADMIN_TOKEN);
    expect((await admin.post('/v1/teams', { id: 'billing' })).status).toBe(201);
    const issue = async (kind: string): Promise<string> =>
      (await admin.post<{ token: string }>('/v1/teams/billing/tokens', { kind, queues: ['billing', 'billing-dlq'] }))
        .body.token;
    teamToken = await issue('team');
    team = apiClient(app.url, teamToken);
    worker = apiClient(app.url, await issue('worker'));
    for (const job of jobs)
      expect((await team.put(`/v1/jobs/${job}`, { queue: 'billing', timeoutSeconds: 60 })).status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await servers?.close();
  });

  it('places the shards on the servers named at first start, in the control database', async () => {
    const { rows } = await db.pool.query<{ shard: number; server: string; epoch: string }>(
      'SELECT shard, server, epoch FROM shard_map ORDER BY shard',
    );
    const names = servers.primaries.map((s) => `127.0.0.1:${s.port}/postgres`);
    expect(rows).toEqual([
      { shard: 0, server: names[0], epoch: '1' },
      { shard: 1, server: names[1], epoch: '1' },
      { shard: 2, server: names[2], epoch: '1' },
      { shard: 3, server: names[0], epoch: '1' },
    ]);
  });

  it("keeps each run, its events and its rows on its shard's server, and leases and completes them all", async () => {
    const enqueued: Array<{ job: string; runId: string }> = [];
    for (const job of jobs)
      for (let i = 0; i < 5; i++) {
        const response = await team.post<{ runId: string }>(`/v1/jobs/${job}/runs`, { payload: { i } });
        expect(response.status).toBe(201);
        enqueued.push({ job, runId: response.body.runId });
      }
    const keyed = await team.post<{ runId: string }>(`/v1/jobs/${jobs[2]}/runs`, {}, { 'idempotency-key': 'k-1' });
    const again = await team.post<{ runId: string }>(`/v1/jobs/${jobs[2]}/runs`, {}, { 'idempotency-key': 'k-1' });
    expect([keyed.status, again.status, again.body.runId]).toEqual([201, 200, keyed.body.runId]);
    enqueued.push({ job: jobs[2]!, runId: keyed.body.runId });

    for (const [i, server] of servers.primaries.entries()) {
      const here = enqueued.filter(({ job }) => shardOf(job, SHARDS) % 3 === i).map((r) => r.runId);
      expect(here.length).toBeGreaterThan(0);
      expect(await column(server.url, 'SELECT run_id AS v FROM runs ORDER BY run_id')).toEqual([...here].sort());
      expect(
        await column(
          server.url,
          "SELECT DISTINCT substr(es_stream_name(stream_key), 5) AS v FROM events WHERE es_stream_name(stream_key) LIKE 'run-%' ORDER BY 1",
        ),
      ).toEqual([...here].sort());
    }
    expect((await db.pool.query('SELECT 1 FROM runs')).rowCount).toBe(0);
    for (const { runId } of enqueued.slice(0, 4))
      expect((await team.get<{ state: string }>(`/v1/runs/${runId}`)).body.state).toBe('ready');

    const leases: Lease[] = [];
    await waitFor(
      async () => {
        leases.push(
          ...(await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max: 7 })).body.leases,
        );
        return leases.length >= enqueued.length;
      },
      { description: 'every run leased', timeoutMs: 20_000 },
    );
    expect(leases.map((l) => l.runId).sort()).toEqual(enqueued.map((r) => r.runId).sort());
    const beat = await worker.post<{ results: Array<{ runId: string; leaseExpiresAt: string | null }> }>(
      '/v1/runs:heartbeat',
      { heartbeats: leases.map((l) => ({ runId: l.runId, fencingToken: l.fencingToken })) },
    );
    expect(beat.status).toBe(200);
    expect(beat.body.results.every((r) => r.leaseExpiresAt !== null)).toBe(true);
    const done = await worker.post<{ results: Array<{ runId: string; state: string }> }>('/v1/runs:complete', {
      completions: leases.map((l) => ({ runId: l.runId, fencingToken: l.fencingToken, outcome: 'success' })),
    });
    expect(done.status).toBe(200);
    expect(new Set(done.body.results.map((r) => r.state))).toEqual(new Set(['succeeded']));
    for (const server of servers.primaries)
      expect(await column(server.url, 'SELECT DISTINCT state AS v FROM runs')).toEqual(['succeeded']);
    const events = await team.get<{ events: Array<{ type: string }> }>(`/v1/runs/${enqueued[0]!.runId}/events`);
    expect(events.body.events.map((e) => e.type)).toEqual([
      'RunScheduled',
      'RunLeased',
      'LeaseExtended',
      'RunSucceeded',
    ]);
  });

  it('lists runs and dead letters from every server, a page at a time, none twice and none left out', async () => {
    const doomed = Array.from({ length: 3 }, (_, shard) => jobOfShard(shard, SHARDS, 'billing.doomed'));
    for (const job of doomed) {
      const defined = await team.put(`/v1/jobs/${job}`, {
        queue: 'billing-dlq',
        retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
      });
      expect(defined.status).toBe(201);
      expect((await team.post(`/v1/jobs/${job}/runs`, {})).status).toBe(201);
    }
    const dlqWorker = apiClient(
      app.url,
      (await admin.post<{ token: string }>('/v1/teams/billing/tokens', { kind: 'worker', queues: ['billing-dlq'] }))
        .body.token,
    );
    const leased: Lease[] = [];
    await waitFor(
      async () => {
        leased.push(
          ...(await dlqWorker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing-dlq'], max: 10 })).body.leases,
        );
        return leased.length === doomed.length;
      },
      { description: 'the doomed runs leased' },
    );
    const failed = await dlqWorker.post<{ results: Array<{ state: string }> }>('/v1/runs:complete', {
      completions: leased.map((l) => ({
        runId: l.runId,
        fencingToken: l.fencingToken,
        outcome: 'failure',
        error: 'no',
      })),
    });
    expect(failed.body.results.map((r) => r.state)).toEqual(['dead', 'dead', 'dead']);

    for (const reader of [team, admin]) {
      const dead = await allPages<{ runId: string }>(reader, '/v1/dlq?limit=2');
      expect(dead.map((r) => r.runId).sort()).toEqual(leased.map((l) => l.runId).sort());
    }
    const runs = await allPages<{ runId: string; dueAt: string }>(team, '/v1/runs?limit=4');
    const everyRun = (
      await Promise.all(servers.primaries.map((s) => column(s.url, 'SELECT run_id AS v FROM runs')))
    ).flat();
    expect(runs.map((r) => r.runId).sort()).toEqual([...everyRun].sort());
    expect(new Set(runs.map((r) => r.runId)).size).toBe(runs.length);
    const dueTimes = runs.map((r) => r.dueAt);
    expect(dueTimes).toEqual([...dueTimes].sort().reverse());
  });

  it("copies the jobs' definitions to every server, for the claims that read them", async () => {
    const defined = (await db.pool.query<{ name: string }>('SELECT name FROM jobs ORDER BY name')).rows.map(
      (r) => r.name,
    );
    expect(defined).toEqual(expect.arrayContaining(jobs));
    for (const server of servers.primaries)
      await waitFor(
        async () =>
          JSON.stringify(await column(server.url, 'SELECT name AS v FROM jobs ORDER BY name')) ===
          JSON.stringify(defined),
        { description: `the jobs on ${server.name}` },
      );
  });

  it('counts the queues, their activity and the shards on every server and adds them up', async () => {
    // Of each job (so on each server): two runs ready now and one due within the minute.
    for (const job of jobs) {
      for (let i = 0; i < 2; i++) expect((await team.post(`/v1/jobs/${job}/runs`, {})).status).toBe(201);
      expect((await team.post(`/v1/jobs/${job}/runs`, { delaySeconds: 30 })).status).toBe(201);
    }
    const leases: Lease[] = [];
    await waitFor(
      async () => {
        const max = 3 - leases.length;
        leases.push(...(await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max })).body.leases);
        return leases.length === 3;
      },
      { description: 'three runs leased', timeoutMs: 20_000 },
    );
    const [dying] = leases;
    const failed = await worker.post(`/v1/runs/${dying!.runId}/complete`, {
      fencingToken: dying!.fencingToken,
      outcome: 'failure',
      error: 'boom',
      retryable: false,
    });
    expect(failed.status).toBe(200);

    // The control database keeps no run: every count below is the servers' added up.
    const stats = await team.post<{ data: { queues: Array<Record<string, unknown>> } }>('/graphql', {
      query: '{ queues { queue priority ready leased retryWait dead } }',
    });
    expect(stats.body.data.queues).toContainEqual({
      queue: 'billing',
      priority: 'default',
      ready: 2 * SHARDS - 3,
      leased: 2,
      retryWait: 0,
      dead: 1,
    });
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    expect(metrics).toMatch(/^chronicle_ready_runs\{queue="billing",priority="default"\} 5$/m);
    expect(metrics).toMatch(/^chronicle_dlq_runs\{queue="billing"\} 1$/m);

    // The first test's 21 runs, leased and succeeded, and these 3 leased, one dead: each server projects its own.
    type Point = { leased: number; succeeded: number; dead: number };
    const total = (points: Point[], count: (p: Point) => number): number => points.reduce((n, p) => n + count(p), 0);
    let points: Point[] = [];
    await waitFor(
      async () => {
        points = (
          await team.post<{ data: { queueHistory: Point[] } }>('/graphql', {
            query: '{ queueHistory(queue: "billing") { leased succeeded dead } }',
          })
        ).body.data.queueHistory;
        return total(points, (p) => p.leased) === 24 && total(points, (p) => p.dead) === 1;
      },
      { description: "the activity of every server's runs", timeoutMs: 20_000 },
    );
    expect(total(points, (p) => p.succeeded)).toBe(21);

    const shards = await apiClient(app.url, ADMIN_TOKEN).get<{
      shards: Array<{ shard: number; server: string; dueNextMinute: number }>;
    }>('/v1/admin/shards');
    expect(shards.status).toBe(200);
    expect(shards.body.shards.map(({ shard, server, dueNextMinute }) => ({ shard, server, dueNextMinute }))).toEqual(
      [0, 1, 2, 3].map((shard) => ({
        shard,
        server: `127.0.0.1:${servers.primaries[shard % 3]!.port}/postgres`,
        dueNextMinute: 1,
      })),
    );
  });
  it("holds a team's maxPendingRuns over every server", async () => {
    expect((await admin.post('/v1/teams', { id: 'growth' })).status).toBe(201);
    const growth = apiClient(
      app.url,
      (await admin.post<{ token: string }>('/v1/teams/growth/tokens', { kind: 'team', queues: ['growth'] })).body.token,
    );
    const growthJobs = [0, 1, 2].map((shard) => jobOfShard(shard, SHARDS, 'growth.job'));
    for (const job of growthJobs) expect((await growth.put(`/v1/jobs/${job}`, { queue: 'growth' })).status).toBe(201);
    expect(
      (
        await admin.put('/v1/teams/growth/quotas', {
          enqueueRatePerSecond: null,
          enqueueBurst: null,
          maxPendingRuns: 4,
        })
      ).status,
    ).toBe(200);
    // Two runs on each of the first two servers: four pending, on two servers.
    for (const job of growthJobs.slice(0, 2))
      for (let i = 0; i < 2; i++) expect((await growth.post(`/v1/jobs/${job}/runs`, {})).status).toBe(201);
    const over = await growth.post<Record<string, unknown>>(`/v1/jobs/${growthJobs[2]}/runs`, {});
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ type: '/problems/quota-exceeded', quota: 'maxPendingRuns' });
  });

  it("shows a team's audit trail from every server's log, a page at a time, newest first", async () => {
    const trail = await allPages<{ streamId: string; revision: number; type: string; recordedAt: string }>(
      team,
      '/v1/audit?limit=7',
    );
    const keys = trail.map((e) => `${e.streamId}@${e.revision}`);
    expect(new Set(keys).size).toBe(keys.length);
    const recorded = trail.map((e) => e.recordedAt);
    expect(recorded).toEqual([...recorded].sort().reverse());
    // Every run event of the team's runs, wherever its run is kept, and the jobs' definitions of the control database.
    const runEvents = (
      await Promise.all(
        servers.primaries.map((s) =>
          column(
            s.url,
            "SELECT es_stream_name(stream_key) || '@' || stream_revision AS v FROM events WHERE es_stream_name(stream_key) LIKE 'run-%' AND team = 'billing'",
          ),
        ),
      )
    ).flat();
    expect(runEvents.length).toBeGreaterThan(50);
    expect(keys.filter((k) => k.startsWith('run-')).sort()).toEqual([...runEvents].sort());
    for (const job of jobs)
      expect(trail).toContainEqual(expect.objectContaining({ streamId: `job-${job}`, type: 'JobDefined' }));
  });

  it("answers for a server's shards with 503 shard-unavailable while it is down, and goes on with the others", async () => {
    const third = servers.primaries[2];
    const name = (i: number): string => `127.0.0.1:${servers.primaries[i]!.port}/postgres`;
    const waiting = await team.post<{ runId: string }>(`/v1/jobs/${jobs[2]}/runs`, { payload: { before: true } });
    expect(waiting.status).toBe(201);
    await third!.stop('immediate');

    const refused = await team.post<Record<string, unknown>>(`/v1/jobs/${jobs[2]}/runs`, {});
    expect(refused.status).toBe(503);
    expect(refused.contentType).toMatch(/application\/problem\+json/);
    expect(refused.body).toMatchObject({ type: '/problems/shard-unavailable', server: name(2), shards: [2] });
    const page = await team.get<{ status?: number; type?: string }>(`/v1/runs/${waiting.body.runId}`);
    expect([page.status, page.body.type]).toEqual([503, '/problems/shard-unavailable']);

    // The other servers' runs flow: enqueued, leased and completed.
    const flowing = await team.post<{ runId: string }>(`/v1/jobs/${jobs[0]}/runs`, {});
    expect(flowing.status).toBe(201);
    const leases: Lease[] = [];
    await waitFor(
      async () => {
        leases.push(
          ...(await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max: 10 })).body.leases,
        );
        return leases.some((l) => l.runId === flowing.body.runId);
      },
      { description: 'the run on a server that is up leased' },
    );
    const done = await worker.post<{ results: Array<{ runId: string; state?: string }> }>('/v1/runs:complete', {
      completions: leases.map((l) => ({ runId: l.runId, fencingToken: l.fencingToken, outcome: 'success' })),
    });
    expect(done.body.results.find((r) => r.runId === flowing.body.runId)?.state).toBe('succeeded');

    const listing = await team.get<{ items: Array<{ runId: string }>; unavailable?: unknown }>('/v1/runs?limit=100');
    expect(listing.status).toBe(200);
    expect(listing.body.unavailable).toEqual([{ server: name(2), shards: [2] }]);
    expect(listing.body.items.map((r) => r.runId)).toContain(flowing.body.runId);

    const health = await apiClient(app.url).get<{ status: string; checks: { runServers: unknown[] } }>('/healthz');
    expect([health.status, health.body.status]).toEqual([200, 'degraded']);
    expect(health.body.checks.runServers).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ server: name(2), shards: [2], status: 'down' }),
        { server: name(0), shards: [0, 3], status: 'up' },
      ]),
    );
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    expect(metrics).toContain(`chronicle_run_server_up{server="${name(2)}"} 0`);
    expect(metrics).toContain(`chronicle_run_server_up{server="${name(0)}"} 1`);

    // A process started meanwhile serves the others too: the server down waits to be migrated.
    const late = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN, undefined, {
      RUN_SHARD_URLS: servers.primaries.map((s) => s.url).join(','),
      SHARDS: String(SHARDS),
    });
    try {
      const lateTeam = apiClient(late.url, teamToken);
      expect((await lateTeam.post(`/v1/jobs/${jobs[0]}/runs`, {})).status).toBe(201);
      expect((await lateTeam.post(`/v1/jobs/${jobs[2]}/runs`, {})).body).toMatchObject({
        type: '/problems/shard-unavailable',
      });
    } finally {
      await late.close();
    }

    // Back: its runs go on where their events left them.
    await third!.start();
    await waitFor(async () => (await team.get(`/v1/runs/${waiting.body.runId}`)).status === 200, {
      description: 'the server back',
      timeoutMs: 20_000,
    });
    const after: Lease[] = [];
    await waitFor(
      async () => {
        after.push(
          ...(await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max: 10 })).body.leases,
        );
        return after.some((l) => l.runId === waiting.body.runId);
      },
      { description: 'the run enqueued before the stop leased', timeoutMs: 20_000 },
    );
    expect(new Set([...leases, ...after].map((l) => `${l.runId}#${l.fencingToken}`)).size).toBe(
      leases.length + after.length,
    );
    const healthy = await apiClient(app.url).get<{ status: string }>('/healthz');
    expect(healthy.body.status).toBe('ok');
  });
});

/** Every page of a REST listing, following nextCursor. */
async function allPages<T>(client: ApiClient, path: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const { status, body }: { status: number; body: { items: T[]; nextCursor: string | null } } = await client.get(
      cursor === null ? path : `${path}&cursor=${encodeURIComponent(cursor)}`,
    );
    expect(status).toBe(200);
    items.push(...body.items);
    if (body.nextCursor === null) return items;
    cursor = body.nextCursor;
  }
  throw new Error(`${path}: more than 100 pages`);
}
