import { ApiModule } from '@chronicle/api';
import { ProjectorModule } from '@chronicle/projector';
import { SchedulerModule } from '@chronicle/scheduler';
import { createTestDatabase, type TestDatabase, waitFor } from '@chronicle/testing';
import { startPostgresServers, type PostgresServers } from '../test/postgres-servers';
import { apiClient, type ApiClient } from './support/api-client';
import { buildDist } from './support/build-dist';
import { chronicle } from './support/chronicle-cli';
import { column, jobOfShard } from './support/run-servers';
import { startApp, type RunningApp } from './support/start-app';
import { createTeam } from './support/team-tokens';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const SHARDS = 2;

interface Lease {
  runId: string;
  fencingToken: number;
}

/**
 * A run server lost and its synchronous standby promoted (`chronicle shards promote`): the map places
 * its shards on the standby under a newer epoch, every run it acknowledged is there, the API follows
 * within a second or two, and the old primary, back, is set read-only.
 */
describe('failover of a run server to its standby', () => {
  let servers: PostgresServers;
  let db: TestDatabase;
  let app: RunningApp;
  let team: ApiClient;
  let worker: ApiClient;
  /** Shard 1's job: its runs on the second primary, which has the standby. */
  const job = jobOfShard(1, SHARDS);
  const name = (port: number): string => `127.0.0.1:${port}/postgres`;

  beforeAll(async () => {
    await buildDist();
    servers = await startPostgresServers({ primaries: 2, standbyOf: [1], synchronous: true });
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], ADMIN_TOKEN, undefined, {
      RUN_SHARD_URLS: servers.primaries.map((s) => s.url).join(','),
      SHARDS: String(SHARDS),
    });
    ({ team, worker } = await createTeam(app.url, ADMIN_TOKEN, 'billing', ['billing']));
    expect((await team.put(`/v1/jobs/${job}`, { queue: 'billing', timeoutSeconds: 600 })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await servers?.close();
  });

  it('loses no acknowledged run, leases none twice with one token, and fences the old primary', async () => {
    const [, primary] = servers.primaries;
    const [standby] = servers.standbys;
    const acknowledged: string[] = [];
    for (let i = 0; i < 6; i++) {
      const response = await team.post<{ runId: string }>(`/v1/jobs/${job}/runs`, { payload: { i } });
      expect(response.status).toBe(201);
      acknowledged.push(response.body.runId);
    }
    const before = (await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max: 2 })).body.leases;
    expect(before).toHaveLength(2);

    await primary!.stop('immediate');
    expect((await team.post(`/v1/jobs/${job}/runs`, {})).status).toBe(503);

    const promoted = await chronicle(['shards', 'promote', name(primary!.port), standby!.url, '--json'], {
      DATABASE_URL: db.url,
      EVENT_STORE_URL: undefined,
      EVENT_STORE: undefined,
    });
    expect(promoted.stderr).toBe('');
    expect(JSON.parse(promoted.stdout)).toMatchObject({
      server: name(primary!.port),
      standby: name(standby!.port),
      shards: [1],
      epoch: 2,
      oldServerFenced: false,
    });

    // The API follows the map: the shard's runs are served from the standby, every acknowledged one there.
    await waitFor(async () => (await team.get(`/v1/runs/${acknowledged[0]}`)).status === 200, {
      description: 'the promoted standby serving the shard',
      timeoutMs: 20_000,
    });
    for (const runId of acknowledged) expect((await team.get(`/v1/runs/${runId}`)).status).toBe(200);
    expect((await team.post(`/v1/jobs/${job}/runs`, {})).status).toBe(201);
    const leased = before[0]!;
    const completed = await worker.post<{ state: string }>(`/v1/runs/${leased.runId}/complete`, {
      fencingToken: leased.fencingToken,
      outcome: 'success',
    });
    expect([completed.status, completed.body.state]).toEqual([200, 'succeeded']);
    const after = (await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max: 100 })).body.leases;
    expect(after.map((l) => l.runId)).not.toContain(before[1]!.runId);
    expect(after).toHaveLength(acknowledged.length - before.length + 1);
    const tokens = [...before, ...after].map((l) => `${l.runId}#${l.fencingToken}`);
    expect(new Set(tokens).size).toBe(tokens.length);

    // The old primary back: set read-only by the first process that reaches it, and not written to.
    await primary!.start();
    await waitFor(async () => (await readOnly(primary!.url)) === 'on', {
      description: 'the old primary fenced',
      timeoutMs: 20_000,
    });
    const { rows } = await db.pool.query<{ fenced: boolean }>(
      'SELECT fenced_at IS NOT NULL AS fenced FROM run_servers WHERE name = $1',
      [name(primary!.port)],
    );
    expect(rows).toEqual([{ fenced: true }]);
    expect((await chronicle(['shards', 'map', '--json'], { DATABASE_URL: db.url })).stdout).toContain(
      name(standby!.port),
    );
  });
});

/** Whether the server at `url` takes writes by default (`on`: read-only), or undefined while it does not answer. */
async function readOnly(url: string): Promise<unknown> {
  return (await column(url, "SELECT current_setting('default_transaction_read_only') AS v").catch(() => []))[0];
}

/** The same without an operator: SHARD_FAILOVER_SECONDS, and the standby named at first start. */
describe('failover of a run server to its standby, by a scheduler node after the grace', () => {
  let servers: PostgresServers;
  let db: TestDatabase;
  let app: RunningApp;
  let team: ApiClient;
  const job = jobOfShard(1, SHARDS);

  beforeAll(async () => {
    servers = await startPostgresServers({ primaries: 2, standbyOf: [1], synchronous: true });
    db = await createTestDatabase();
    app = await startApp(
      db.pool,
      db.eventStore,
      [ApiModule, SchedulerModule, ProjectorModule],
      ADMIN_TOKEN,
      undefined,
      {
        RUN_SHARD_URLS: servers.primaries.map((s) => s.url).join(','),
        RUN_SHARD_STANDBY_URLS: `,${servers.standbys[0]!.url}`,
        SHARD_FAILOVER_SECONDS: '2',
        SHARDS: String(SHARDS),
        CANARIES: 'off',
      },
    );
    const admin = apiClient(app.url, ADMIN_TOKEN);
    expect((await admin.post('/v1/teams', { id: 'billing' })).status).toBe(201);
    team = apiClient(
      app.url,
      (await admin.post<{ token: string }>('/v1/teams/billing/tokens', { kind: 'team', queues: ['billing'] })).body
        .token,
    );
    expect((await team.put(`/v1/jobs/${job}`, { queue: 'billing' })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await servers?.close();
  });

  it('promotes the standby once the primary has been silent for the grace, and loses no acknowledged run', async () => {
    const [, primary] = servers.primaries;
    const [standby] = servers.standbys;
    const acknowledged = await team.post<{ runId: string }>(`/v1/jobs/${job}/runs`, {});
    expect(acknowledged.status).toBe(201);
    const stoppedAt = Date.now();
    await primary!.stop('immediate');
    await waitFor(async () => (await team.post(`/v1/jobs/${job}/runs`, {})).status === 201, {
      description: 'the shard served again, from the standby',
      timeoutMs: 30_000,
    });
    // Not before the grace: the scheduler waited 2 s of silence.
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(2_000);
    expect((await team.get(`/v1/runs/${acknowledged.body.runId}`)).status).toBe(200);
    const { rows } = await db.pool.query<{ server: string; epoch: string }>(
      'SELECT server, epoch FROM shard_map WHERE shard = 1',
    );
    expect(rows).toEqual([{ server: `127.0.0.1:${standby!.port}/postgres`, epoch: '2' }]);
  });
});
