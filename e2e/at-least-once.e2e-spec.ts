import { execFileSync, spawn } from 'node:child_process';
import {
  waitFor,
  createTestDatabase,
  type TestDatabase,
  TEST_ENV,
  TEST_EVENT_LOG,
  databaseUrl,
} from '@chronicle/testing';
import { statSync } from 'node:fs';
import { ApiModule } from '@chronicle/api';
import { ProjectorModule } from '@chronicle/projector';
import { SchedulerModule } from '@chronicle/scheduler';
import { PostgresEventStore } from '@chronicle/event-store';
import { adminQuery, createPool, migrate } from '@chronicle/platform';
import { randomBytes } from 'node:crypto';
import { SchedulerClient, Worker } from '@chronicle/worker-sdk';
import type { ApiClient } from './support/api-client';
import { createTeam } from './support/team-tokens';
import { startApp, type RunningApp } from './support/start-app';
import { QUIET_WORKER_LOGGER } from './support/quiet-worker-logger';

const ADMIN_TOKEN = 'e2e-admin-token-at-least-once-0123456789';

async function setUpTeam(
  app: RunningApp,
  job: Record<string, unknown>,
): Promise<{ team: ApiClient; workerToken: string }> {
  const { team, workerToken } = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
  expect((await team.put('/v1/jobs/ops.task', { queue: 'ops', ...job })).status).toBe(201);
  return { team, workerToken };
}

describe('at-least-once execution', () => {
  describe('a worker process killed mid-run', () => {
    let db: TestDatabase;
    let app: RunningApp;
    beforeAll(async () => {
      db = await createTestDatabase();
      app = await startApp(db.pool, db.eventStore, [ApiModule, SchedulerModule], ADMIN_TOKEN);
    });
    afterAll(async () => {
      await app?.close();
      await db?.drop();
    });

    it('is leased again after its lease expires, and completes', async () => {
      const { team, workerToken } = await setUpTeam(app, { retry: { maxAttempts: 3, baseSeconds: 0, maxSeconds: 0 } });
      const { body: run } = await team.post<{ runId: string }>('/v1/jobs/ops.task/runs', { payload: { n: 1 } });

      // A real worker process: it leases the run, starts "working" and is killed -9.
      const script = `
        fetch(process.argv[1] + '/v1/lease', { method: 'POST', headers: { authorization: 'Bearer ' + process.argv[2], 'content-type': 'application/json' },
          body: JSON.stringify({ queues: ['ops'], max: 1, leaseSeconds: 1, workerId: 'doomed' }) })
          .then((r) => r.json()).then((b) => { process.stdout.write(JSON.stringify(b) + '\\n'); setInterval(() => undefined, 1000); });`;
      const doomed = spawn(process.execPath, ['-e', script, app.url, workerToken], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const leased = await new Promise<{ leases: Array<{ runId: string }> }>((resolve) =>
        doomed.stdout.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()))),
      );
      expect(leased.leases.map((l) => l.runId)).toEqual([run.runId]);
      doomed.kill('SIGKILL');

      const handled: Array<{ runId: string; attempt: number }> = [];
      const worker = new Worker({
        client: new SchedulerClient({ baseUrl: app.url, token: workerToken }),
        queues: ['ops'],
        waitSeconds: 1,
        logger: QUIET_WORKER_LOGGER,
        handler: async (leasedRun, context) => {
          handled.push({ runId: leasedRun.runId, attempt: context.attempt });
        },
      });
      const running = worker.run();
      await waitFor(
        async () => (await team.get<{ state: string }>(`/v1/runs/${run.runId}`)).body.state === 'succeeded',
        15_000,
      );
      await worker.shutdown({ graceMs: 1000 });
      await running;
      expect(handled).toEqual([{ runId: run.runId, attempt: 2 }]);
      const events = (
        await team.get<{ events: Array<{ type: string }> }>(`/v1/runs/${run.runId}/events`)
      ).body.events.map((e) => e.type);
      expect(events).toEqual(['RunScheduled', 'RunLeased', 'LeaseExpired', 'RunLeased', 'RunSucceeded']);
    }, 30_000);
  });

  /*
   * Which database restarts: with the log in the read models' database, that
   * one; with TEST_EVENT_LOG=split, the log's alone and the read models' alone.
   * The restarting one is on a server of its own (test/global-setup.ts):
   * restarting the shared one would hit other test files.
   */
  const layouts: ReadonlyArray<{ name: string; restarts: 'both' | 'log' | 'read models' }> =
    TEST_EVENT_LOG === 'split'
      ? [
          { name: 'the event log restarting alone (split)', restarts: 'log' },
          { name: 'the read models restarting alone (split)', restarts: 'read models' },
        ]
      : [{ name: 'PostgreSQL (log and read models) restarting', restarts: 'both' }];

  describe.each(layouts)('$name under load', ({ restarts }) => {
    let app: RunningApp;
    let restarting: ReturnType<typeof createPool>;
    let other: TestDatabase | undefined;
    /** Where the events are, for the reconciliation. */
    let log: ReturnType<typeof createPool>;
    beforeAll(async () => {
      restarting = createPool({ connectionString: await freshRestartableDatabase(), max: 10 });
      other = restarts === 'both' ? undefined : await createTestDatabase();
      const readModels = restarts === 'log' ? other!.pool : restarting;
      log = restarts === 'read models' ? other!.pool : restarting;
      // All three roles, as npm start runs them: with a log of its own, the projector repairs rows a restart left behind.
      app = await startApp(
        readModels,
        new PostgresEventStore(log),
        [ApiModule, SchedulerModule, ProjectorModule],
        ADMIN_TOKEN,
      );
    });
    afterAll(async () => {
      await app?.close();
      await restarting?.end();
      await other?.drop();
    });

    it('loses no run: afterwards every enqueued run is succeeded, dead or cancelled, once', async () => {
      const { team, workerToken } = await setUpTeam(app, { retry: { maxAttempts: 10, baseSeconds: 0, maxSeconds: 1 } });
      const workers = [1, 2].map(
        (n) =>
          new Worker({
            client: new SchedulerClient({ baseUrl: app.url, token: workerToken }),
            queues: ['ops'],
            concurrency: 10,
            leaseSeconds: 3,
            waitSeconds: 1,
            workerId: `w${n}`,
            logger: QUIET_WORKER_LOGGER,
            handler: () => new Promise((resolve) => setTimeout(resolve, 5)), // the work: 5 ms
          }),
      );
      const running = workers.map((w) => w.run());
      const total = 300;
      try {
        const producer = (async () => {
          for (let i = 0; i < total; i++) {
            // The producer retries with its Idempotency-Key until the scheduler answers: no duplicates.
            await waitFor(
              async () => {
                const response = await team
                  .post(`/v1/jobs/ops.task/runs`, { payload: { i } }, { 'idempotency-key': `load-${i}` })
                  .catch(() => ({ status: 0 }));
                return response.status === 201 || response.status === 200;
              },
              { timeoutMs: 60_000, pollMs: 100, description: `an answer to the enqueue of run ${i}` },
            );
          }
        })();
        await waitFor(async () => (await countScheduled(log).catch(() => 0)) >= 100, 20_000);
        const startedBefore = await postmasterStart(restarting);
        restartPostgres();
        expect(await postmasterStart(restarting)).not.toEqual(startedBefore);
        await producer;
        await waitFor(async () => {
          const counts = await reconcile(log).catch(() => undefined);
          return counts !== undefined && counts.terminal === total;
        }, 60_000);
      } finally {
        // Stopped whatever happened: running workers would keep jest from ever finishing.
        await Promise.all(workers.map((w) => w.shutdown({ graceMs: 1000 })));
        await Promise.all(running);
      }
      const counts = await reconcile(log);
      expect(counts).toEqual({
        scheduled: total,
        terminal: total,
        succeeded: counts.succeeded,
        dead: counts.dead,
        cancelled: 0,
        doubleEnded: 0,
      });
      expect(counts.succeeded + counts.dead + counts.cancelled).toBe(total);
    }, 120_000);
  });
});

/** A new migrated database on the restartable server, so each layout starts empty. */
async function freshRestartableDatabase(): Promise<string> {
  const serverUrl = requiredEnv(TEST_ENV.restartableUrl);
  const name = `restart_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  const url = databaseUrl(serverUrl, name);
  await migrate(url);
  return url;
}

/** pg_ctl restart -m fast: every connection is cut, the server comes back on the same port and data. */
function restartPostgres(): void {
  const dataDir = requiredEnv(TEST_ENV.restartableDataDir);
  const { uid, gid } = statSync(dataDir);
  execFileSync(requiredEnv(TEST_ENV.pgCtl), ['-D', dataDir, '-m', 'fast', '-w', '-t', '60', 'restart'], {
    uid,
    gid,
    stdio: 'ignore',
  });
}

async function postmasterStart(pool: ReturnType<typeof createPool>): Promise<string> {
  for (let tries = 0; ; tries++) {
    try {
      const { rows } = await pool.query<{ started: Date }>('SELECT pg_postmaster_start_time() AS started');
      return rows[0]!.started.toISOString();
    } catch (err) {
      if (tries > 20) throw err; // connections cut by the restart are replaced on the next tries
    }
  }
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set: run the tests with jest`);
  return value;
}

async function countScheduled(pool: ReturnType<typeof createPool>): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM events WHERE event_type = 'RunScheduled' AND data->>'team' <> '_system'",
  );
  return rows[0]?.n ?? 0;
}

/** Reconciliation from the event log alone: runs scheduled = succeeded + dead + cancelled, each run ending once. */
async function reconcile(pool: ReturnType<typeof createPool>): Promise<{
  scheduled: number;
  terminal: number;
  succeeded: number;
  dead: number;
  cancelled: number;
  doubleEnded: number;
}> {
  const { rows } = await pool.query<{
    scheduled: number;
    terminal: number;
    succeeded: number;
    dead: number;
    cancelled: number;
    double_ended: number;
  }>(`
    WITH per_run AS (
      SELECT stream_key,
             count(*) FILTER (WHERE event_type = 'RunScheduled') AS scheduled,
             count(*) FILTER (WHERE event_type = 'RunSucceeded') AS succeeded,
             count(*) FILTER (WHERE event_type = 'RunDead') AS dead,
             count(*) FILTER (WHERE event_type = 'RunCancelled') AS cancelled
        FROM events WHERE es_stream_name(stream_key) LIKE 'run-%'
         -- The test's runs: not the canaries the scheduler makes every minute beside them.
         AND stream_key NOT IN (SELECT stream_key FROM events WHERE event_type = 'RunScheduled' AND data->>'team' = '_system')
       GROUP BY stream_key)
    SELECT sum(scheduled)::int AS scheduled, count(*) FILTER (WHERE succeeded + dead + cancelled > 0)::int AS terminal,
           sum(succeeded)::int AS succeeded, sum(dead)::int AS dead, sum(cancelled)::int AS cancelled,
           count(*) FILTER (WHERE succeeded + dead + cancelled > 1)::int AS double_ended
      FROM per_run`);
  const r = rows[0]!;
  return {
    scheduled: r.scheduled,
    terminal: r.terminal,
    succeeded: r.succeeded,
    dead: r.dead,
    cancelled: r.cancelled,
    doubleEnded: r.double_ended,
  };
}
