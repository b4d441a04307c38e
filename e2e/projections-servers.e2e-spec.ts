import { ApiModule } from '@chronicle/api';
import { ProjectorModule } from '@chronicle/projector';
import { PROJECTIONS, RUN_PROJECTIONS, jobsProjection } from '@chronicle/projections';
import { createTestDatabase, type TestDatabase, waitFor } from '@chronicle/testing';
import { startPostgresServers, type PostgresServers } from '../test/postgres-servers';
import { apiClient, type ApiClient } from './support/api-client';
import { buildDist } from './support/build-dist';
import { chronicle, type Ran } from './support/chronicle-cli';
import { scrapeMetrics } from './support/prometheus-text';
import { column, jobOfShard } from './support/run-servers';
import { startApp, type RunningApp } from './support/start-app';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const SHARDS = 2;

interface Lease {
  runId: string;
  fencingToken: number;
}

/**
 * The operator's view of the projections with runs on two servers (docs/sharding.md): `chronicle
 * projections status|verify|rebuild` and the lag gauge name each server, the control database's
 * projections built from its log, each server's runs' read models from its own and its jobs copy from
 * the control database's.
 */
describe('projections on every server: the CLI and the lag gauge', () => {
  let servers: PostgresServers;
  let db: TestDatabase;
  let app: RunningApp;
  let team: ApiClient;
  /** The server names of the map: shard s is on server s. */
  let names: string[];
  /** A run of each shard's job, by shard. */
  const runIds: string[] = [];
  const jobs = Array.from({ length: SHARDS }, (_, shard) => jobOfShard(shard, SHARDS, 'billing.projected'));
  /** The CLI as an operator runs it: the control database and its log, the deployment's SHARDS. */
  const cli = (...args: string[]): Promise<Ran> =>
    chronicle(args, {
      DATABASE_URL: db.url,
      EVENT_STORE_URL: db.logUrl === db.url ? undefined : db.logUrl,
      EVENT_STORE: undefined,
      RUN_SHARD_URLS: undefined,
      SHARDS: String(SHARDS),
    });
  /** Every (server, projection) the deployment keeps: the control database's, then each server's. */
  const kept = (): string[] => [
    ...PROJECTIONS.map((p) => `control/${p.name}`),
    ...names.flatMap((server) => [...RUN_PROJECTIONS, jobsProjection].map((p) => `${server}/${p.name}`)),
  ];

  beforeAll(async () => {
    const built = buildDist();
    servers = await startPostgresServers({ primaries: SHARDS });
    names = servers.primaries.map((s) => `127.0.0.1:${s.port}/postgres`);
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], ADMIN_TOKEN, undefined, {
      RUN_SHARD_URLS: servers.primaries.map((s) => s.url).join(','),
      SHARDS: String(SHARDS),
    });
    const admin = apiClient(app.url, ADMIN_TOKEN);
    expect((await admin.post('/v1/teams', { id: 'billing' })).status).toBe(201);
    const issue = async (kind: string): Promise<string> =>
      (await admin.post<{ token: string }>('/v1/teams/billing/tokens', { kind, queues: ['billing'] })).body.token;
    team = apiClient(app.url, await issue('team'));
    const worker = apiClient(app.url, await issue('worker'));
    for (const job of jobs) {
      expect((await team.put(`/v1/jobs/${job}`, { queue: 'billing', timeoutSeconds: 60 })).status).toBe(201);
      for (let i = 0; i < 3; i++) {
        const enqueued = await team.post<{ runId: string }>(`/v1/jobs/${job}/runs`, { payload: { i } });
        expect(enqueued.status).toBe(201);
        if (i === 0) runIds.push(enqueued.body.runId);
      }
    }
    // A run of each server leased and completed: its runs and its activity counts have rows to compare.
    const leases: Lease[] = [];
    await waitFor(
      async () => {
        leases.push(
          ...(await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max: 6 })).body.leases,
        );
        return leases.length >= 6;
      },
      { description: 'every run leased', timeoutMs: 20_000 },
    );
    const done = await worker.post('/v1/runs:complete', {
      completions: leases.map((l) => ({ runId: l.runId, fencingToken: l.fencingToken, outcome: 'success' })),
    });
    expect(done.status).toBe(200);
    await built;
  }, 240_000);

  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await servers?.close();
  });

  it("labels the lag gauge by server: every server's projections, each down to 0 behind its log", async () => {
    let lags: Record<string, number> = {};
    await waitFor(
      async () => {
        const scrape = await scrapeMetrics(app.url);
        lags = Object.fromEntries(
          scrape
            .series('chronicle_projection_lag_events')
            .map(({ labels, value }) => [`${labels['server']}/${labels['projection']}`, value]),
        );
        return Object.values(lags).every((events) => events === 0) && Object.keys(lags).length === kept().length;
      },
      { description: 'every projection caught up', timeoutMs: 20_000 },
    );
    expect(Object.keys(lags).sort()).toEqual(kept().sort());
  });

  it("lists each server's projections with its version and checkpoint, and the log each is built from", async () => {
    const status = await cli('--json', 'projections', 'status');
    expect(status.code).toBe(0);
    const rows = JSON.parse(status.stdout) as Array<{
      server: string;
      projection: string;
      log: string;
      version: number;
      storedVersion: number | null;
      commitPosition: string | null;
    }>;
    expect(rows.map((r) => `${r.server}/${r.projection}`)).toEqual(kept());
    for (const row of rows) {
      const { version } = PROJECTIONS.find((p) => p.name === row.projection)!;
      expect(row).toMatchObject({ version, storedVersion: version });
      expect(Number(row.commitPosition)).toBeGreaterThan(0);
      expect(row.log).toBe(row.server === 'control' || row.projection === 'jobs' ? 'control' : row.server);
    }
    const text = await cli('projections', 'status');
    expect(text.stdout.split('\n')[0]).toMatch(/^server\s+projection\s+version\s+storedVersion\s+commitPosition/);
  });

  it('verifies every server, the jobs copies against the control log: 0 differences, exit 0', async () => {
    const verified = await cli('projections', 'verify');
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(new RegExp(`^verified ${kept().length} projections on 3 servers: 0 differences`));
    for (const server of names) {
      expect(verified.stdout).toMatch(new RegExp(`\\n  ${server}: runs, run-activity: \\d+ events .*, 0 differences`));
      expect(verified.stdout).toContain(`\n  ${server}: jobs (from the control log): `);
    }
  });

  it("finds a row changed on one server's runs and another on a jobs copy, names their servers, and exits 1", async () => {
    const [first, second] = servers.primaries;
    await column(second!.url, 'UPDATE runs SET attempt = 9 WHERE run_id = $1 RETURNING run_id AS v', [runIds[1]]);
    await column(first!.url, 'UPDATE jobs SET paused = true WHERE name = $1 RETURNING name AS v', [jobs[0]]);

    const verified = await cli('--json', 'projections', 'verify');
    expect(verified.code).toBe(1);
    const report = JSON.parse(verified.stdout.split('\n')[0]!) as {
      differences: Array<{ server: string; table: string; kind: string; key: string }>;
      servers: Array<{ server: string; log: string; differences: number }>;
    };
    expect(report.differences).toEqual([
      { server: names[0], table: 'jobs', kind: 'different', key: `{"name": "${jobs[0]}"}` },
      { server: names[1], table: 'runs', kind: 'different', key: `{"run_id": "${runIds[1]}"}` },
    ]);
    expect(report.servers.map((s) => `${s.server}<-${s.log}: ${s.differences}`)).toEqual([
      'control<-control: 0',
      `${names[0]}<-${names[0]}: 0`,
      `${names[0]}<-control: 1`,
      `${names[1]}<-${names[1]}: 1`,
      `${names[1]}<-control: 0`,
    ]);
    expect(verified.stderr).toContain(`2 rows differ from the log on ${names[0]}, ${names[1]}`);
  });

  it('rebuilds a projection on every server that keeps it, each from its log, and verify finds nothing then', async () => {
    const rebuilt = await cli('--json', 'projections', 'rebuild', 'runs');
    // With what it said on stderr, should it fail.
    expect({ code: rebuilt.code, stderr: rebuilt.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    const report = JSON.parse(rebuilt.stdout) as {
      projection: string;
      servers: Array<{ server: string; log: string }>;
    };
    expect(report.projection).toBe('runs');
    expect(report.servers.map((s) => `${s.server}<-${s.log}`)).toEqual([
      'control<-control',
      `${names[0]}<-${names[0]}`,
      `${names[1]}<-${names[1]}`,
    ]);
    expect(
      await column(servers.primaries[1]!.url, 'SELECT attempt AS v FROM runs WHERE run_id = $1', [runIds[1]]),
    ).toEqual([1]);

    const jobsRebuilt = await cli('projections', 'rebuild', 'jobs');
    expect(jobsRebuilt.code).toBe(0);
    expect(jobsRebuilt.stdout).toMatch(/^rebuilt jobs on control: \d+ events in /);
    for (const server of names)
      expect(jobsRebuilt.stdout).toContain(`rebuilt jobs on ${server} (from the control log): `);
    expect(await column(servers.primaries[0]!.url, 'SELECT paused AS v FROM jobs WHERE name = $1', [jobs[0]])).toEqual([
      false,
    ]);

    const verified = await cli('projections', 'verify');
    expect(verified).toMatchObject({ code: 0 });
    expect(verified.stdout).toContain(': 0 differences');
  });
});
