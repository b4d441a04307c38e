import { ApiModule } from '@chronicle/api';
import { LeaseRunsHandler } from '@chronicle/commands';
import { createTestDatabase, type TestDatabase, waitFor } from '@chronicle/testing';
import type { ApiClient } from './support/api-client';
import { startApp, type RunningApp } from './support/start-app';
import { createTeam } from './support/team-tokens';

const ADMIN_TOKEN = 'e2e-admin-token-long-poll-0123456789';

/**
 * A long poll (`POST /v1/lease` with waitSeconds) ends with its worker: a
 * worker that hangs up, as the SDK does on shutdown, must not have runs
 * leased in its name that nobody will ever run (they would wait for their
 * lease to expire).
 */
describe('long-polling leases', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let team: ApiClient;
  let worker: ApiClient;
  let workerToken: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    ({ team, worker, workerToken } = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']));
    expect((await team.put('/v1/jobs/ops.nightly', { queue: 'ops' })).status).toBe(201);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('claims nothing for a worker that hung up: the run goes to the next worker that asks', async () => {
    const hangingUp = new AbortController();
    const abandoned = fetch(`${app.url}/v1/lease`, {
      method: 'POST',
      headers: { authorization: `Bearer ${workerToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ queues: ['ops'], max: 1, waitSeconds: 20, workerId: 'gone' }),
      signal: hangingUp.signal,
    }).catch((err: unknown) => err);
    const leases = app.app.get(LeaseRunsHandler);
    await waitFor(() => leases.openPolls === 1, { description: 'the poll to be waiting on the server' });
    hangingUp.abort();
    expect(await abandoned).toMatchObject({ name: 'AbortError' });
    await waitFor(() => leases.openPolls === 0, {
      description: 'the server to end the poll of the worker that hung up',
    });

    const enqueued = await team.post<{ runId: string }>('/v1/jobs/ops.nightly/runs', {});
    expect(enqueued.status).toBe(201);
    const next = await worker.post<{ leases: Array<{ runId: string }> }>('/v1/lease', {
      queues: ['ops'],
      max: 1,
      waitSeconds: 5,
      workerId: 'next',
    });
    expect(next.body.leases.map((l) => l.runId)).toEqual([enqueued.body.runId]);
    const events = await team.get<{ events: Array<{ type: string; data: { workerId?: string } }> }>(
      `/v1/runs/${enqueued.body.runId}/events`,
    );
    expect(events.body.events.filter((e) => e.type === 'RunLeased').map((e) => e.data.workerId)).toEqual(['next']);
  });

  it('tries again within its grace for a ready run another transaction holds, asking the rate buckets once', async () => {
    const enqueued = await team.post<{ runId: string }>('/v1/jobs/ops.nightly/runs', {});
    expect(enqueued.status).toBe(201);
    const holder = await db.pool.connect();
    const statements = jest.spyOn(db.pool, 'query');
    try {
      // The run's stream lock, the lock a claim tries for each run it takes (and a completion holds).
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(run_lock_key($1))', [enqueued.body.runId]);
      const held = await worker.post<{ leases: unknown[] }>('/v1/lease', { queues: ['ops'], max: 1, workerId: 'w' });
      expect(held.body.leases).toEqual([]);
      const named = (name: string): number =>
        statements.mock.calls.filter(([config]) => (config as { name?: string }).name === name).length;
      // Tried again every few milliseconds of the grace (each empty try looks for the next due run), with the
      // rate buckets (none here) looked at the first time only.
      expect(named('claim_next_available_at')).toBeGreaterThan(3);
      expect(named('claim_next_rate_token_at')).toBe(1);
    } finally {
      statements.mockRestore();
      await holder.query('ROLLBACK');
      holder.release();
    }
    const next = await worker.post<{ leases: Array<{ runId: string }> }>('/v1/lease', {
      queues: ['ops'],
      max: 1,
      workerId: 'w',
    });
    expect(next.body.leases.map((l) => l.runId)).toEqual([enqueued.body.runId]);
  });
});
