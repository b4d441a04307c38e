import { ApiModule } from '@chronicle/api';
import { waitFor, catchUpUntil, createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { ProjectionRunner, jobsProjection, runsProjection } from '@chronicle/projections';
import { SchedulerModule } from '@chronicle/scheduler';
import type { EventStore } from '@chronicle/event-store';
import { createLogger } from '@chronicle/platform';
import type { ApiClient } from './support/api-client';
import { createTeam } from './support/team-tokens';
import { startApp, type RunningApp } from './support/start-app';

const ADMIN_TOKEN = 'e2e-admin-token-guarantees-0123456789';

interface Lease {
  runId: string;
  fencingToken: number;
  attempt: number;
  leaseExpiresAt: string;
}

/** The delivery guarantees (docs/api.md, "The worker protocol"), each proven over HTTP against the running app. */
describe('delivery guarantees', () => {
  let db: TestDatabase;
  let store: EventStore;
  let app: RunningApp;
  let team: ApiClient;
  let worker: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.eventStore;
    app = await startApp(db.pool, store, [ApiModule, SchedulerModule], ADMIN_TOKEN);
    ({ team, worker } = await createTeam(app.url, ADMIN_TOKEN, 'load', ['load', 'reap']));
    await team.put('/v1/jobs/load.noop', { queue: 'load', retry: { maxAttempts: 3, baseSeconds: 0, maxSeconds: 0 } });
    await team.put('/v1/jobs/reap.slow', { queue: 'reap', retry: { maxAttempts: 2, baseSeconds: 0, maxSeconds: 0 } });
  }, 60_000);
  let closed = false;
  afterAll(async () => {
    if (!closed) await app?.close();
    await db?.drop();
  });

  it('leases each of 5,000 ready runs exactly once to 8 concurrent lease loops, never repeating a token', async () => {
    for (let batch = 0; batch < 5; batch++) {
      const response = await team.post<{ runs: Array<{ created: boolean }> }>('/v1/runs:batch', {
        runs: Array.from({ length: 1000 }, (_, i) => ({ job: 'load.noop', payload: { batch, i } })),
      });
      expect(response.status).toBe(200);
      expect(response.body.runs.filter((r) => r.created)).toHaveLength(1000);
    }
    const leases: Lease[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, loop) => {
        while (true) {
          const { status, body } = await worker.post<{ leases: Lease[] }>('/v1/lease', {
            queues: ['load'],
            max: 50,
            workerId: `loop-${loop}`,
          });
          expect(status).toBe(200);
          if (body.leases.length === 0) return;
          leases.push(...body.leases);
        }
      }),
    );
    expect(leases).toHaveLength(5000);
    expect(new Set(leases.map((l) => l.runId)).size).toBe(5000);
    expect(new Set(leases.map((l) => `${l.runId}#${l.fencingToken}`)).size).toBe(5000);
    // The log agrees: one RunLeased per run.
    const { rows } = await db.log.query<{ leased: number; runs: number }>(
      "SELECT count(*)::int AS leased, count(DISTINCT stream_key)::int AS runs FROM events WHERE event_type = 'RunLeased' AND data->>'workerId' LIKE 'loop-%'",
    );
    expect(rows[0]).toEqual({ leased: 5000, runs: 5000 });
  }, 120_000);

  it('accepts a repeated batch with the same idempotency keys without new runs', async () => {
    const runs = [
      { job: 'load.noop', idempotencyKey: 'k-1' },
      { job: 'load.noop', idempotencyKey: 'k-2' },
      { job: 'load.noop', idempotencyKey: 'k-1' },
    ];
    const first = await team.post<{ runs: Array<{ runId: string; created: boolean }> }>('/v1/runs:batch', { runs });
    const second = await team.post<{ runs: Array<{ runId: string; created: boolean }> }>('/v1/runs:batch', { runs });
    expect(first.body.runs.map((r) => r.created)).toEqual([true, true, false]);
    expect(first.body.runs[0]?.runId).toBe(first.body.runs[2]?.runId);
    expect(second.body.runs.map((r) => r.created)).toEqual([false, false, false]);
    expect(second.body.runs.map((r) => r.runId)).toEqual(first.body.runs.map((r) => r.runId));
    await worker.post('/v1/lease', { queues: ['load'], max: 10 });
  });

  it('returns an expired lease within a second of expiry, then dead-letters it when no attempt is left', async () => {
    const { body: run } = await team.post<{ runId: string }>('/v1/jobs/reap.slow/runs', {});
    const lease = async (): Promise<Lease> => {
      const { body } = await worker.post<{ leases: Lease[] }>('/v1/lease', {
        queues: ['reap'],
        max: 1,
        leaseSeconds: 1,
        waitSeconds: 5,
      });
      expect(body.leases).toHaveLength(1);
      return body.leases[0]!;
    };
    const first = await lease();
    const events = async (): Promise<Array<{ type: string; recordedAt: string }>> =>
      (await team.get<{ events: Array<{ type: string; recordedAt: string }> }>(`/v1/runs/${run.runId}/events`)).body
        .events;
    await waitFor(async () => (await events()).some((e) => e.type === 'LeaseExpired'), 5000);
    const expired = (await events()).find((e) => e.type === 'LeaseExpired')!;
    expect(Date.parse(expired.recordedAt) - Date.parse(first.leaseExpiresAt)).toBeLessThan(1000);
    // The stale holder can no longer complete.
    expect(
      (await worker.post(`/v1/runs/${run.runId}/complete`, { fencingToken: first.fencingToken, outcome: 'success' }))
        .status,
    ).toBe(409);
    const second = await lease();
    expect(second.attempt).toBe(2);
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await waitFor(async () => (await events()).some((e) => e.type === 'RunDead'), 5000);
    expect((await events()).map((e) => e.type)).toEqual([
      'RunScheduled',
      'RunLeased',
      'LeaseExpired',
      'RunLeased',
      'LeaseExpired',
      'RunDead',
    ]);
    expect((await team.get(`/v1/runs/${run.runId}`)).body).toMatchObject({ state: 'dead' });
  }, 30_000);

  it('rebuilds the read models from the log to the same content', async () => {
    // The log stops growing first: the scheduler's passes (the canaries' runs each minute, the reaper)
    // would otherwise add to it between the snapshot and the rebuild.
    closed = true;
    await app.close();
    const snapshot = async (): Promise<unknown[]> => [
      (
        await db.pool.query(
          'SELECT run_id, team, job, queue, priority, state, available_at, due_at, attempt, attempt_limit, lease_expires_at, fencing_token, worker_id, leased_at, last_error, dead_at, death, discarded, revision FROM runs ORDER BY run_id',
        )
      ).rows,
      (
        await db.pool.query(
          'SELECT run_id, team, job, queue, due_at, kept_on, definition FROM run_listing ORDER BY run_id',
        )
      ).rows,
      (await db.pool.query('SELECT name, team, definition, version, paused, revision FROM jobs ORDER BY name')).rows,
    ];
    const before = await snapshot();
    expect((before[0] as unknown[]).length).toBeGreaterThan(5000);
    await db.pool.query('TRUNCATE runs, run_listing, jobs');
    await db.pool.query("DELETE FROM projection_checkpoints WHERE projection IN ('runs', 'jobs')");
    const logger = createLogger('error');
    // The runner reads the whole log: the teams' streams (the admin's changes) as well as the jobs' and runs'.
    const { rows } = await db.log.query<{ events: number }>('SELECT count(*)::int AS events FROM events');
    const everything = rows[0]!.events;
    expect(await catchUpUntil(new ProjectionRunner(store, db.pool, jobsProjection, logger), everything)).toBe(
      everything,
    );
    expect(
      await catchUpUntil(new ProjectionRunner(store, db.pool, runsProjection, logger, { batchSize: 1000 }), everything),
    ).toBe(everything);
    expect(await snapshot()).toEqual(before);
  }, 120_000);
});
