import { createHash } from 'node:crypto';
import { ApiModule } from '@chronicle/api';
import { LeaseRunsHandler, runSlot, slotOf } from '@chronicle/commands';
import { createTestDatabase, seedRuns, testJob, type TestDatabase, waitFor } from '@chronicle/testing';
import { apiClient, type ApiClient } from './support/api-client';
import { startApp, type RunningApp } from './support/start-app';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

interface Lease {
  runId: string;
  job: string;
  attempt: number;
  idempotencyKey: string;
  fencingToken: number;
  leaseExpiresAt: string;
  payload: unknown;
}

describe('run lifecycle over HTTP', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let admin: ApiClient;
  let team: ApiClient;
  let worker: ApiClient;
  let otherTeam: ApiClient;
  /** The actor of the team token's events: `team:billing:token:<its id>`. */
  let teamActor: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    admin = apiClient(app.url, ADMIN_TOKEN);
    expect((await admin.post('/v1/teams', { id: 'billing' })).status).toBe(201);
    expect((await admin.post('/v1/teams', { id: 'growth' })).status).toBe(201);
    const issue = async (teamId: string, kind: string, queues: string[]): Promise<{ token: string; id: string }> => {
      const response = await admin.post<{ token: string; id: string }>(`/v1/teams/${teamId}/tokens`, { kind, queues });
      expect(response.status).toBe(201);
      expect(response.body.id).toMatch(/^tok_[A-Za-z0-9_-]{16}$/);
      return response.body;
    };
    const teamToken = await issue('billing', 'team', ['billing', 'billing-slow']);
    team = apiClient(app.url, teamToken.token);
    teamActor = `team:billing:token:${teamToken.id}`;
    worker = apiClient(app.url, (await issue('billing', 'worker', ['billing'])).token);
    otherTeam = apiClient(app.url, (await issue('growth', 'team', ['growth'])).token);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const job = (name: string, overrides: Record<string, unknown> = {}): Promise<unknown> =>
    team.put(`/v1/jobs/${name}`, {
      queue: 'billing',
      priority: 'critical',
      timeoutSeconds: 900,
      retry: { maxAttempts: 2, baseSeconds: 0, maxSeconds: 0 },
      payload: { format: 'csv' },
      ...overrides,
    });
  const leaseAll = async (max = 100): Promise<Lease[]> =>
    (await worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max })).body.leases;
  const eventTypes = async (runId: string): Promise<string[]> =>
    (await team.get<{ events: Array<{ type: string }> }>(`/v1/runs/${runId}/events`)).body.events.map((e) => e.type);

  describe('authentication', () => {
    it('answers 401 without a token or with an unknown one, as a problem', async () => {
      const anonymous = await apiClient(app.url).get('/v1/jobs/anything');
      expect(anonymous.status).toBe(401);
      expect(anonymous.contentType).toMatch(/application\/problem\+json/);
      expect(anonymous.body).toMatchObject({ type: '/problems/unauthorized', status: 401 });
      expect((await apiClient(app.url, 'sch_team_not-a-real-token').get('/v1/jobs/anything')).status).toBe(401);
    });

    it('keeps admin calls for the admin and team calls for team tokens', async () => {
      expect((await team.post('/v1/teams', { id: 'sneaky' })).status).toBe(403);
      expect((await worker.put('/v1/jobs/x', { queue: 'billing' })).status).toBe(403);
      expect((await team.post('/v1/lease', { queues: ['billing'], max: 1 })).status).toBe(403);
    });

    it('stores only a hash of each issued token', async () => {
      const { body } = await admin.post<{ token: string }>('/v1/teams/billing/tokens', {
        kind: 'worker',
        queues: ['billing'],
      });
      const { rows } = await db.pool.query<{ token_hash: string }>('SELECT token_hash FROM api_tokens');
      expect(rows.map((r) => r.token_hash)).toContain(createHash('sha256').update(body.token).digest('hex'));
      expect(JSON.stringify(rows)).not.toContain(body.token);
    });

    it("lets a worker token act only on its queues' runs", async () => {
      await job('billing.slow', { queue: 'billing-slow' });
      const { body: run } = await team.post<{ runId: string }>('/v1/jobs/billing.slow/runs', {});
      expect((await worker.post('/v1/lease', { queues: ['billing-slow'], max: 1 })).status).toBe(403);
      expect((await worker.post(`/v1/runs/${run.runId}/heartbeat`, { fencingToken: 1 })).status).toBe(404);
      expect((await team.post(`/v1/runs/${run.runId}:cancel`)).status).toBe(200);
    });

    it('refuses a job on a queue the token was not granted', async () => {
      const response = await team.put('/v1/jobs/elsewhere', { queue: 'growth' });
      expect(response.status).toBe(403);
      expect(response.body).toMatchObject({ type: '/problems/forbidden' });
    });
  });

  describe('job definitions', () => {
    it('creates (201), repeats without a new version (200), updates to version 2, and reads back', async () => {
      const created = await team.put<{ version: number }>('/v1/jobs/billing.export-invoices', {
        queue: 'billing',
        priority: 'critical',
        timeoutSeconds: 900,
        retry: { maxAttempts: 5, baseSeconds: 30, maxSeconds: 1800 },
        concurrency: 1,
        payload: { format: 'csv' },
        schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin' },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        name: 'billing.export-invoices',
        queue: 'billing',
        priority: 'critical',
        version: 1,
        paused: false,
        schedule: { cron: '0 2 * * *' },
      });
      const again = await team.put<{ version: number }>('/v1/jobs/billing.export-invoices', {
        queue: 'billing',
        priority: 'critical',
        timeoutSeconds: 900,
        retry: { maxAttempts: 5, baseSeconds: 30, maxSeconds: 1800 },
        concurrency: 1,
        payload: { format: 'csv' },
        schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin' },
      });
      expect([again.status, again.body.version]).toEqual([200, 1]);
      const updated = await team.put<{ version: number }>('/v1/jobs/billing.export-invoices', {
        queue: 'billing',
        priority: 'default',
      });
      expect([updated.status, updated.body.version]).toEqual([200, 2]);
      expect((await team.get('/v1/jobs/billing.export-invoices')).body).toMatchObject({
        priority: 'default',
        version: 2,
      });
    });

    it("hides a team's job from another team", async () => {
      await job('billing.private');
      expect((await otherTeam.get('/v1/jobs/billing.private')).status).toBe(404);
      expect((await otherTeam.put('/v1/jobs/billing.private', { queue: 'growth' })).status).toBe(404);
    });
  });

  describe('runs and workers', () => {
    it('runs a job end to end: enqueue, lease with a fencing token, heartbeat, complete, and the full history', async () => {
      await job('billing.e2e');
      const enqueued = await team.post<{ runId: string; state: string; attempt: number; idempotencyKey: string }>(
        '/v1/jobs/billing.e2e/runs',
        { payload: { invoice: 42 } },
      );
      expect(enqueued.status).toBe(201);
      expect(enqueued.body).toMatchObject({ job: 'billing.e2e', state: 'ready', attempt: 0 });
      const [lease] = await leaseAll();
      expect(lease).toMatchObject({
        runId: enqueued.body.runId,
        job: 'billing.e2e',
        attempt: 1,
        idempotencyKey: enqueued.body.idempotencyKey,
        fencingToken: 1,
        payload: { invoice: 42 },
      });
      const heartbeat = await worker.post<{ leaseExpiresAt: string }>(`/v1/runs/${lease!.runId}/heartbeat`, {
        fencingToken: lease!.fencingToken,
        leaseSeconds: 60,
      });
      expect(heartbeat.status).toBe(200);
      expect(Date.parse(heartbeat.body.leaseExpiresAt)).toBeGreaterThan(Date.parse(lease!.leaseExpiresAt));
      const complete = await worker.post(`/v1/runs/${lease!.runId}/complete`, {
        fencingToken: lease!.fencingToken,
        outcome: 'success',
      });
      expect(complete.body).toMatchObject({ state: 'succeeded' });
      expect((await team.get(`/v1/runs/${lease!.runId}`)).body).toMatchObject({ state: 'succeeded', attempt: 1 });
      const history = await team.get<{
        events: Array<{
          type: string;
          revision: number;
          data: Record<string, unknown>;
          metadata: { actor: string } & Record<string, unknown>;
        }>;
      }>(`/v1/runs/${lease!.runId}/events`);
      expect(history.body.events.map((e) => [e.type, e.revision, e.metadata.actor])).toEqual([
        ['RunScheduled', 0, teamActor],
        ['RunLeased', 1, 'worker:billing:anonymous'],
        ['LeaseExtended', 2, 'worker:billing:anonymous'],
        ['RunSucceeded', 3, 'worker:billing:anonymous'],
      ]);
      // Every event records whose run it is; the rest of its place is in its RunScheduled alone.
      const { team: owner } = history.body.events[0]!.data;
      expect(owner).toBe('billing');
      for (const event of history.body.events) {
        expect(event.metadata.team).toBe(owner);
        for (const key of ['queue', 'priority', 'dueAt']) expect(event.metadata).not.toHaveProperty(key);
      }
    });

    it("caps a lease and its heartbeats by the job's timeoutSeconds", async () => {
      await job('billing.short', { timeoutSeconds: 5 });
      await team.post('/v1/jobs/billing.short/runs', {});
      const { body } = await worker.post<{ leases: Lease[] }>('/v1/lease', {
        queues: ['billing'],
        max: 1,
        leaseSeconds: 3600,
      });
      const lease = body.leases[0]!;
      const leasedAt = Date.now();
      expect(Date.parse(lease.leaseExpiresAt)).toBeLessThanOrEqual(leasedAt + 5000);
      const heartbeat = await worker.post<{ leaseExpiresAt: string }>(`/v1/runs/${lease.runId}/heartbeat`, {
        fencingToken: lease.fencingToken,
        leaseSeconds: 3600,
      });
      expect(heartbeat.body.leaseExpiresAt).toBe(lease.leaseExpiresAt);
      await worker.post(`/v1/runs/${lease.runId}/complete`, { fencingToken: lease.fencingToken, outcome: 'success' });
    });

    it('returns the same run for a repeated Idempotency-Key', async () => {
      await job('billing.idem');
      const first = await team.post<{ runId: string; idempotencyKey: string }>(
        '/v1/jobs/billing.idem/runs',
        {},
        { 'idempotency-key': 'invoice-2026-03' },
      );
      const second = await team.post<{ runId: string }>(
        '/v1/jobs/billing.idem/runs',
        {},
        { 'idempotency-key': 'invoice-2026-03' },
      );
      expect([first.status, second.status]).toEqual([201, 200]);
      expect(second.body.runId).toBe(first.body.runId);
      expect(first.body.idempotencyKey).toBe('invoice-2026-03');
      await leaseAll();
    });

    it("gives a new run an id that names its job's slot, and finds a run made before that by its Idempotency-Key", async () => {
      await job('billing.slotted');
      const made = await team.post<{ runId: string }>('/v1/jobs/billing.slotted/runs', {});
      const keyed = await team.post<{ runId: string }>(
        '/v1/jobs/billing.slotted/runs',
        {},
        { 'idempotency-key': 'k1' },
      );
      for (const { body } of [made, keyed]) {
        expect(body.runId).toMatch(/^run_[0-9a-f]{12}8[0-9a-f]{19}$/);
        expect(runSlot(body.runId)).toBe(slotOf('billing.slotted'));
      }
      // A run enqueued with this key before run ids named their slot has the id of then.
      const legacyId = legacyDerivedId('billing.slotted', 'invoice-2025');
      await seedRuns(
        db.pool,
        db.eventStore,
        [],
        [
          {
            job: testJob({ name: 'billing.slotted', team: 'billing', queue: 'billing' }),
            runId: legacyId,
            dueAt: new Date(),
          },
        ],
      );
      const again = await team.post<{ runId: string }>(
        '/v1/jobs/billing.slotted/runs',
        {},
        { 'idempotency-key': 'invoice-2025' },
      );
      expect(again.status).toBe(200);
      expect(again.body.runId).toBe(legacyId);
      await leaseAll();
    });

    it('retries a failure, answers a stale fencing token with 409 stale-lease, and dead-letters the last failure', async () => {
      await job('billing.flaky');
      const { body: run } = await team.post<{ runId: string }>('/v1/jobs/billing.flaky/runs', {});
      const [first] = await leaseAll();
      const failed = await worker.post(`/v1/runs/${run.runId}/complete`, {
        fencingToken: first!.fencingToken,
        outcome: 'failure',
        error: 'downstream 503',
      });
      expect(failed.body).toMatchObject({ state: 'retry_wait' });
      const stale = await worker.post(`/v1/runs/${run.runId}/heartbeat`, { fencingToken: first!.fencingToken });
      expect(stale.status).toBe(409);
      expect(stale.body).toMatchObject({ type: '/problems/stale-lease' });
      const [second] = await leaseAll();
      expect(second).toMatchObject({ runId: run.runId, attempt: 2 });
      expect(second!.fencingToken).toBeGreaterThan(first!.fencingToken);
      const last = await worker.post(`/v1/runs/${run.runId}/complete`, {
        fencingToken: second!.fencingToken,
        outcome: 'failure',
        error: 'still down',
      });
      expect(last.body).toMatchObject({ state: 'dead' });
      expect(await eventTypes(run.runId)).toEqual([
        'RunScheduled',
        'RunLeased',
        'RunFailed',
        'RunLeased',
        'RunFailed',
        'RunDead',
      ]);
      expect((await team.get(`/v1/runs/${run.runId}`)).body).toMatchObject({ state: 'dead', lastError: 'still down' });
    });

    it('completes many runs in one call, each answered on its own: a stale token or an unknown run refuses that run alone', async () => {
      await job('billing.many');
      await team.post('/v1/runs:batch', {
        runs: [{ job: 'billing.many' }, { job: 'billing.many' }, { job: 'billing.many' }],
      });
      const [a, b, c] = await leaseAll();
      const response = await worker.post<{ results: Array<Record<string, unknown>> }>('/v1/runs:complete', {
        completions: [
          { runId: a!.runId, fencingToken: a!.fencingToken, outcome: 'success' },
          { runId: b!.runId, fencingToken: b!.fencingToken + 1, outcome: 'success' },
          { runId: c!.runId, fencingToken: c!.fencingToken, outcome: 'failure', error: 'timeout' },
          { runId: 'run_nope', fencingToken: 1, outcome: 'success' },
        ],
      });
      expect(response.status).toBe(200);
      expect(response.body.results).toEqual([
        { runId: a!.runId, state: 'succeeded', retryAt: null },
        { runId: b!.runId, problem: expect.objectContaining({ type: '/problems/stale-lease', status: 409 }) },
        { runId: c!.runId, state: 'retry_wait', retryAt: expect.any(String) },
        { runId: 'run_nope', problem: expect.objectContaining({ type: '/problems/not-found', status: 404 }) },
      ]);
      expect(await eventTypes(b!.runId)).toEqual(['RunScheduled', 'RunLeased']);
      expect(await eventTypes(c!.runId)).toEqual(['RunScheduled', 'RunLeased', 'RunFailed']);
      expect((await worker.post('/v1/runs:complete', { completions: [] })).status).toBe(400);
      expect(
        (
          await worker.post('/v1/runs:complete', {
            completions: Array.from({ length: 101 }, () => ({ runId: b!.runId, fencingToken: 1, outcome: 'success' })),
          })
        ).status,
      ).toBe(400);
      await worker.post(`/v1/runs/${b!.runId}/complete`, { fencingToken: b!.fencingToken, outcome: 'success' });
    });

    it('leases the next runs in the completion call that asks for them, in the same transaction', async () => {
      await job('billing.next');
      await team.post('/v1/runs:batch', {
        runs: [{ job: 'billing.next' }, { job: 'billing.next' }, { job: 'billing.next' }],
      });
      const leased = await leaseAll(1);
      expect(leased).toHaveLength(1);
      const [done] = leased;
      const response = await worker.post<{ results: Array<Record<string, unknown>>; leases: Lease[] }>(
        '/v1/runs:complete',
        {
          completions: [{ runId: done!.runId, fencingToken: done!.fencingToken, outcome: 'success' }],
          lease: { queues: ['billing'], max: 5, leaseSeconds: 60, workerId: 'next-worker' },
        },
      );
      expect(response.status).toBe(200);
      expect(response.body.results).toEqual([{ runId: done!.runId, state: 'succeeded', retryAt: null }]);
      // The rest (runs left ready by the tests before come along), leased as POST /v1/lease leases them.
      const next = response.body.leases;
      expect([done!, ...next].filter((l) => l.job === 'billing.next')).toHaveLength(3);
      expect(next.map((l) => l.runId)).not.toContain(done!.runId);
      for (const lease of next) {
        expect(lease).toMatchObject({
          attempt: 1,
          fencingToken: expect.any(Number),
          leaseExpiresAt: expect.any(String),
        });
        expect(await eventTypes(lease.runId)).toEqual(['RunScheduled', 'RunLeased']);
        const events = (
          await team.get<{ events: Array<{ actor?: string; metadata?: Record<string, unknown> }> }>(
            `/v1/runs/${lease.runId}/events`,
          )
        ).body.events;
        expect(JSON.stringify(events[1])).toContain('next-worker');
      }
      // Without `lease` the answer has no `leases`; a lease outside the token's queues is refused whole.
      const plain = await worker.post('/v1/runs:complete', {
        completions: next.map((l) => ({ runId: l.runId, fencingToken: l.fencingToken, outcome: 'success' })),
      });
      expect(plain.body).not.toHaveProperty('leases');
      const foreign = await worker.post('/v1/runs:complete', {
        completions: [{ runId: done!.runId, fencingToken: done!.fencingToken, outcome: 'success' }],
        lease: { queues: ['not-ours'], max: 1 },
      });
      expect(foreign.status).toBe(403);
      expect(
        (await worker.post('/v1/runs:complete', { completions: [], lease: { queues: ['billing'], max: 0 } })).status,
      ).toBe(400);
    });

    it('heartbeats many runs in one call, each answered on its own: a stale token or an unknown run refuses that run alone', async () => {
      await job('billing.beats');
      await team.post('/v1/runs:batch', { runs: [{ job: 'billing.beats' }, { job: 'billing.beats' }] });
      // Runs left ready by the tests before come along; they are completed at the end.
      const leased = await leaseAll();
      const [a, b] = leased.filter((lease) => lease.job === 'billing.beats');
      const response = await worker.post<{ results: Array<Record<string, unknown>> }>('/v1/runs:heartbeat', {
        heartbeats: [
          { runId: a!.runId, fencingToken: a!.fencingToken, leaseSeconds: 600 },
          { runId: b!.runId, fencingToken: b!.fencingToken + 1 },
          { runId: 'run_nope', fencingToken: 1 },
        ],
      });
      expect(response.status).toBe(200);
      expect(response.body.results).toEqual([
        { runId: a!.runId, leaseExpiresAt: expect.any(String) },
        { runId: b!.runId, problem: expect.objectContaining({ type: '/problems/stale-lease', status: 409 }) },
        { runId: 'run_nope', problem: expect.objectContaining({ type: '/problems/not-found', status: 404 }) },
      ]);
      // The lease now ends about 600 s from now, not 30.
      expect(Date.parse(response.body.results[0]!['leaseExpiresAt'] as string) - Date.now()).toBeGreaterThan(500_000);
      expect(await eventTypes(a!.runId)).toEqual(['RunScheduled', 'RunLeased', 'LeaseExtended']);
      expect(await eventTypes(b!.runId)).toEqual(['RunScheduled', 'RunLeased']);
      expect((await worker.post('/v1/runs:heartbeat', { heartbeats: [] })).status).toBe(400);
      for (const run of leased)
        await worker.post(`/v1/runs/${run.runId}/complete`, { fencingToken: run.fencingToken, outcome: 'success' });
    });

    it('sends a non-retryable failure straight to dead', async () => {
      await job('billing.poison');
      await team.post('/v1/jobs/billing.poison/runs', {});
      const [lease] = await leaseAll();
      const response = await worker.post(`/v1/runs/${lease!.runId}/complete`, {
        fencingToken: lease!.fencingToken,
        outcome: 'failure',
        error: 'bad input',
        retryable: false,
      });
      expect(response.body).toMatchObject({ state: 'dead' });
    });

    it('does not lease a paused job until it resumes', async () => {
      await job('billing.pausable');
      expect((await team.post('/v1/jobs/billing.pausable:pause')).body).toMatchObject({ paused: true });
      const { body: run } = await team.post<{ runId: string }>('/v1/jobs/billing.pausable/runs', {});
      expect((await leaseAll()).map((l) => l.runId)).not.toContain(run.runId);
      expect((await team.post('/v1/jobs/billing.pausable:resume')).body).toMatchObject({ paused: false });
      expect((await leaseAll()).map((l) => l.runId)).toContain(run.runId);
    });

    it('leases a run due within the prefetch window ahead of its due time, to start then (notBefore), and records it', async () => {
      await job('billing.prefetched');
      // Due in 1.8 s: the calls below take milliseconds, so the run is still ahead of its time when leased.
      const runAt = new Date(Date.now() + 1_800).toISOString();
      const { body: run } = await team.post<{ runId: string }>('/v1/jobs/billing.prefetched/runs', { runAt });
      expect((await leaseAll()).map((l) => l.runId)).not.toContain(run.runId);
      const { body } = await worker.post<{ leases: Array<Lease & { notBefore?: string }> }>('/v1/lease', {
        queues: ['billing'],
        max: 100,
        leaseSeconds: 60,
        prefetchMs: 2000,
      });
      const lease = body.leases.find((l) => l.runId === run.runId);
      expect(lease?.notBefore).toBe(runAt);
      // The lease runs from the start.
      expect(lease?.leaseExpiresAt).toBe(new Date(Date.parse(runAt) + 60_000).toISOString());
      const history = await team.get<{ events: Array<{ type: string; data: { notBefore?: string } }> }>(
        `/v1/runs/${run.runId}/events`,
      );
      expect(history.body.events.find((e) => e.type === 'RunLeased')?.data.notBefore).toBe(runAt);
      for (const prefetchMs of [2001, -1, 1.5]) {
        const refused = await worker.post<{ type: string }>('/v1/lease', { queues: ['billing'], max: 1, prefetchMs });
        expect([refused.status, refused.body.type]).toEqual([400, '/problems/validation-error']);
      }
    });

    it('cancels a delayed run, and refuses to cancel a finished one with 409 invalid-transition', async () => {
      await job('billing.cancellable');
      const { body: delayed } = await team.post<{ runId: string; state: string }>('/v1/jobs/billing.cancellable/runs', {
        delaySeconds: 3600,
      });
      expect(delayed.state).toBe('scheduled');
      expect((await team.post(`/v1/runs/${delayed.runId}:cancel`)).body).toMatchObject({ state: 'cancelled' });
      expect((await team.post(`/v1/runs/${delayed.runId}:cancel`)).body).toMatchObject({
        status: 409,
        type: '/problems/invalid-transition',
      });
      expect((await otherTeam.get(`/v1/runs/${delayed.runId}`)).status).toBe(404);
    });

    it('long-polls: a waiting lease request returns as soon as a run is enqueued', async () => {
      await job('billing.longpoll');
      await leaseAll();
      const polls = app.app.get(LeaseRunsHandler);
      const started = Date.now();
      const waiting = worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['billing'], max: 1, waitSeconds: 10 });
      await waitFor(() => polls.openPolls === 1, { description: 'the lease request to be waiting on the server' });
      await team.post('/v1/jobs/billing.longpoll/runs', {});
      const { body } = await waiting;
      expect(body.leases).toHaveLength(1);
      expect(Date.now() - started).toBeLessThan(2000);
    });

    it('long-polls until the deadline and returns an empty list when nothing comes', async () => {
      const started = Date.now();
      const { status, body } = await worker.post<{ leases: Lease[] }>('/v1/lease', {
        queues: ['billing'],
        max: 5,
        waitSeconds: 1,
      });
      expect([status, body.leases]).toEqual([200, []]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    });
  });

  describe('OpenAPI', () => {
    it('serves the /v1 document generated from the controllers at /docs', async () => {
      const ui = await fetch(`${app.url}/docs`);
      expect(ui.status).toBe(200);
      expect(await ui.text()).toMatch(/swagger/i);
      const doc = (await (await fetch(`${app.url}/docs-json`)).json()) as {
        openapi: string;
        paths: Record<string, unknown>;
        components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
      };
      expect(doc.openapi).toMatch(/^3\./);
      expect(Object.keys(doc.paths)).toEqual(
        expect.arrayContaining([
          '/v1/jobs/{name}',
          '/v1/jobs/{name}/runs',
          '/v1/lease',
          '/v1/runs/{id}/heartbeat',
          '/v1/runs/{id}/complete',
          '/v1/dlq',
        ]),
      );
      expect(Object.keys(doc.components.schemas['LeaseBody']?.properties ?? {})).toEqual(
        expect.arrayContaining(['queues', 'max', 'waitSeconds', 'leaseSeconds', 'workerId']),
      );
    });
  });

  describe('schedule previews', () => {
    it('previews nominal fire times in UTC, with the default DST rule', async () => {
      const { status, body } = await team.post<{ fireTimes: string[] }>('/v1/schedules:preview', {
        schedule: { cron: '30 2 * * *', timeZone: 'Europe/Berlin' },
        after: '2026-03-27T12:00:00Z',
        count: 3,
      });
      expect(status).toBe(200);
      expect(body.fireTimes).toEqual(['2026-03-28T01:30:00Z', '2026-03-29T01:00:00Z', '2026-03-30T00:30:00Z']);
    });

    it('previews an RRULE schedule in its zone', async () => {
      const { body } = await team.post<{ fireTimes: string[] }>('/v1/schedules:preview', {
        schedule: { rrule: 'FREQ=MONTHLY;BYDAY=MO;BYSETPOS=1;BYHOUR=9;BYMINUTE=0', timeZone: 'America/New_York' },
        after: '2026-02-15T00:00:00Z',
        count: 2,
      });
      expect(body.fireTimes).toEqual(['2026-03-02T14:00:00Z', '2026-04-06T13:00:00Z']);
    });

    it('previews schedules that fire once in years, and refuses one that never fires', async () => {
      const leap = await team.post<{ fireTimes: string[] }>('/v1/schedules:preview', {
        schedule: { cron: '0 0 29 2 *', timeZone: 'UTC' },
        after: '2026-12-02T00:00:00Z',
        count: 3,
      });
      expect(leap.body.fireTimes).toEqual(['2028-02-29T00:00:00Z', '2032-02-29T00:00:00Z', '2036-02-29T00:00:00Z']);
      const mondays = await team.post<{ fireTimes: string[] }>('/v1/schedules:preview', {
        schedule: { rrule: 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO', timeZone: 'UTC' },
        after: '2026-12-02T00:00:00Z',
        count: 2,
      });
      expect(mondays.body.fireTimes).toEqual(['2044-02-29T00:00:00Z', '2072-02-29T00:00:00Z']);
      const never = await team.post('/v1/schedules:preview', { schedule: { cron: '0 0 30 2 *', timeZone: 'UTC' } });
      expect(never.status).toBe(400);
      expect(never.body).toMatchObject({ type: '/problems/invalid-schedule', field: 'schedule.cron' });
    });

    it("previews a job's next fire times with its stable jitter", async () => {
      await job('billing.hourly', { schedule: { cron: '0 * * * *', timeZone: 'UTC', jitterSeconds: 60 } });
      const { body } = await team.get<{ fireTimes: string[] }>('/v1/jobs/billing.hourly/preview?count=3');
      expect(body.fireTimes).toHaveLength(3);
      const offsets = body.fireTimes.map((t) => (Date.parse(t) / 1000) % 3600);
      expect(new Set(offsets).size).toBe(1);
      expect(offsets[0]).toBeLessThan(60);
      expect(Date.parse(body.fireTimes[1]!) - Date.parse(body.fireTimes[0]!)).toBe(3_600_000);
    });

    it('answers a bad cron or count with a 400 problem naming the field', async () => {
      const bad = await team.post('/v1/schedules:preview', { schedule: { cron: '0 25 * * *', timeZone: 'UTC' } });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({
        type: '/problems/invalid-schedule',
        detail: expect.stringContaining('hour'),
        field: 'schedule.cron',
      });
      expect((await team.post('/v1/schedules:preview', { schedule: { cron: '0 2 * * *' }, count: 101 })).status).toBe(
        400,
      );
      expect((await team.get('/v1/jobs/billing.hourly/preview?count=0')).status).toBe(400);
    });
  });

  describe('dead-letter queue', () => {
    interface DeadRun {
      runId: string;
      job: string;
      lastError: string | null;
      deadAt: string;
    }
    const kill = async (jobName: string, error: string): Promise<string> => {
      await job(jobName, { retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 } });
      const { body } = await team.post<{ runId: string }>(`/v1/jobs/${jobName}/runs`, {});
      const leases = await leaseAll();
      const lease = leases.find((l) => l.runId === body.runId)!;
      await worker.post(`/v1/runs/${lease.runId}/complete`, {
        fencingToken: lease.fencingToken,
        outcome: 'failure',
        error,
      });
      return body.runId;
    };

    it('lists dead runs newest first, in pages that neither repeat nor skip while runs keep dying', async () => {
      const older = await kill('billing.dlq-a', 'first');
      const newer = await kill('billing.dlq-b', 'second');
      const page1 = await team.get<{ items: DeadRun[]; nextCursor: string | null }>('/v1/dlq?limit=1');
      expect(page1.body.items.map((i) => i.runId)).toEqual([newer]);
      const dyingMeanwhile = await kill('billing.dlq-c', 'third');
      const rest: DeadRun[] = [];
      for (let cursor = page1.body.nextCursor; cursor !== null;) {
        const page = await team.get<{ items: DeadRun[]; nextCursor: string | null }>(
          `/v1/dlq?limit=2&cursor=${cursor}`,
        );
        rest.push(...page.body.items);
        cursor = page.body.nextCursor;
      }
      const seen = [newer, ...rest.map((i) => i.runId)];
      expect(seen).toContain(older);
      expect(seen).not.toContain(dyingMeanwhile);
      expect(new Set(seen).size).toBe(seen.length);
      expect(
        (await team.get<{ items: DeadRun[] }>('/v1/dlq?job=billing.dlq-a')).body.items.map((i) => i.runId),
      ).toEqual([older]);
      expect((await otherTeam.get<{ items: DeadRun[] }>('/v1/dlq')).body.items).toEqual([]);
      expect((await team.get('/v1/dlq?cursor=not-a-cursor')).status).toBe(400);
    });

    it('shows a dead run with its last error and attempt history', async () => {
      const runId = await kill('billing.dlq-show', 'disk full');
      const { status, body } = await team.get<
        DeadRun & { reason: string; attempts: Array<{ attempt: number; outcome: string; error: string | null }> }
      >(`/v1/dlq/${runId}`);
      expect(status).toBe(200);
      expect(body).toMatchObject({
        runId,
        job: 'billing.dlq-show',
        reason: 'attempts_exhausted',
        lastError: 'disk full',
      });
      expect(body.attempts.map((a) => [a.attempt, a.outcome, a.error])).toEqual([[1, 'failure', 'disk full']]);
      expect((await otherTeam.get(`/v1/dlq/${runId}`)).status).toBe(404);
    });

    it('replays a dead run with a fresh attempt budget (the attempt count goes on), recording who did it', async () => {
      const runId = await kill('billing.dlq-replay', 'flaky');
      const replayed = await team.post(`/v1/dlq/${runId}:replay`);
      expect(replayed.body).toMatchObject({ state: 'ready', attempt: 1 });
      const lease = (await leaseAll()).find((l) => l.runId === runId);
      expect(lease).toMatchObject({ attempt: 2 });
      await worker.post(`/v1/runs/${runId}/complete`, { fencingToken: lease!.fencingToken, outcome: 'success' });
      const history = await team.get<{ events: Array<{ type: string; metadata: { actor: string } }> }>(
        `/v1/runs/${runId}/events`,
      );
      expect(history.body.events.find((e) => e.type === 'RunReplayed')?.metadata.actor).toBe(teamActor);
      expect((await team.get(`/v1/dlq/${runId}`)).status).toBe(404);
    });

    it('discards a dead run from the DLQ view while its history stays in the log', async () => {
      const runId = await kill('billing.dlq-discard', 'gone');
      expect((await team.post(`/v1/dlq/${runId}:discard`)).status).toBe(200);
      expect((await team.get<{ items: DeadRun[] }>('/v1/dlq?job=billing.dlq-discard')).body.items).toEqual([]);
      expect((await team.get(`/v1/dlq/${runId}`)).status).toBe(404);
      expect(await eventTypes(runId)).toEqual(['RunScheduled', 'RunLeased', 'RunFailed', 'RunDead', 'RunDiscarded']);
      expect((await team.post(`/v1/dlq/${runId}:replay`)).body).toMatchObject({
        status: 409,
        type: '/problems/invalid-transition',
      });
    });
  });

  describe('bad input gets a 4xx problem, never a 500, and writes nothing', () => {
    it.each([
      [
        'malformed JSON',
        () => team.raw('PUT', '/v1/jobs/bad.json', '{"queue": "billing"', { 'content-type': 'application/json' }),
        400,
      ],
      ['an unknown field', () => team.put('/v1/jobs/bad.unknown', { queue: 'billing', colour: 'red' }), 400],
      ['a wrong type', () => team.put('/v1/jobs/bad.type', { queue: 'billing', timeoutSeconds: 'soon' }), 400],
      ['a huge number', () => team.put('/v1/jobs/bad.huge', { queue: 'billing', timeoutSeconds: 1e300 }), 400],
      [
        'a negative duration',
        () =>
          team.put('/v1/jobs/bad.negative', {
            queue: 'billing',
            retry: { maxAttempts: 1, baseSeconds: -5, maxSeconds: 1 },
          }),
        400,
      ],
      ['an unknown priority', () => team.put('/v1/jobs/bad.priority', { queue: 'billing', priority: 'urgent' }), 400],
      ['a name 10 KB long', () => team.put(`/v1/jobs/${'x'.repeat(10_000)}`, { queue: 'billing' }), 400],
      ['a name with an encoded slash', () => team.put('/v1/jobs/a%2Fb', { queue: 'billing' }), 400],
      [
        'a payload over 256 KB',
        () => team.put('/v1/jobs/bad.payload', { queue: 'billing', payload: { blob: 'x'.repeat(300 * 1024) } }),
        413,
      ],
      ['a lease for 0 runs', () => worker.post('/v1/lease', { queues: ['billing'], max: 0 }), 400],
      [
        'a lease wait of an hour',
        () => worker.post('/v1/lease', { queues: ['billing'], max: 1, waitSeconds: 3600 }),
        400,
      ],
      ['an unknown method', () => team.post('/v1/jobs/billing.e2e:explode'), 404],
      [
        'a cron with six fields',
        () =>
          team.put('/v1/jobs/bad.cron', {
            queue: 'billing',
            schedule: { cron: '0 0 2 * * *', timeZone: 'Europe/Berlin' },
          }),
        400,
        'invalid-schedule',
      ],
      [
        'a time zone that is not IANA',
        () => team.put('/v1/jobs/bad.zone', { queue: 'billing', schedule: { cron: '0 2 * * *', timeZone: 'CEST' } }),
        400,
        'invalid-schedule',
      ],
      [
        'both cron and rrule',
        () => team.put('/v1/jobs/bad.both', { queue: 'billing', schedule: { cron: '0 2 * * *', rrule: 'FREQ=DAILY' } }),
        400,
        'invalid-schedule',
      ],
      [
        'an rrule that never fires',
        () =>
          team.put('/v1/jobs/bad.never', {
            queue: 'billing',
            schedule: { rrule: 'DTSTART:20200101T000000\nRRULE:FREQ=DAILY;COUNT=1', timeZone: 'UTC' },
          }),
        400,
        'invalid-schedule',
      ],
      [
        'an rrule firing every second',
        () =>
          team.put('/v1/jobs/bad.secondly', {
            queue: 'billing',
            schedule: { rrule: 'FREQ=SECONDLY', timeZone: 'UTC' },
          }),
        400,
        'invalid-schedule',
      ],
      [
        'jitter longer than the period',
        () =>
          team.put('/v1/jobs/bad.jitter', {
            queue: 'billing',
            schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 120 },
          }),
        400,
        'invalid-schedule',
      ],
      [
        'a batch of 1,001 runs',
        () => team.post('/v1/runs:batch', { runs: Array.from({ length: 1001 }, () => ({ job: 'billing.e2e' })) }),
        400,
      ],
      [
        'runAt and delaySeconds together',
        () => team.post('/v1/jobs/billing.e2e/runs', { runAt: '2030-01-01T00:00:00Z', delaySeconds: 5 }),
        400,
      ],
      ['a runAt that is not a time', () => team.post('/v1/jobs/billing.e2e/runs', { runAt: 'tomorrow' }), 400],
      // A NUL went on to PostgreSQL, which cannot hold one in text: a 500.
      ['a dead letter id with a NUL', () => team.get('/v1/dlq/run_a%00b'), 404, 'not-found'],
    ] as Array<
      [
        string,
        () => Promise<{ status: number; body: Record<string, unknown>; contentType: string | null }>,
        number,
        string?,
      ]
    >)('%s', async (...row) => {
      // Rest parameters: a fourth declared parameter would make jest wait for a `done` callback.
      const [, send, status, type] = row;
      const response = await send();
      expect(response.status).toBe(status);
      if (type !== undefined) expect(response.body['type']).toBe(`/problems/${type}`);
      expect(response.contentType).toMatch(/application\/problem\+json/);
      expect(response.body).toMatchObject({
        type: expect.stringMatching(/^\/problems\//),
        title: expect.any(String),
        status,
        detail: expect.any(String),
      });
    });

    it('wrote no job for any of them', async () => {
      const { rows } = await db.log.query(
        "SELECT count(*)::int AS n FROM events WHERE es_stream_name(stream_key) LIKE 'job-bad.%'",
      );
      expect(rows[0]).toEqual({ n: 0 });
    });
  });
});

/** A run id derived from (job, Idempotency-Key) as it was made before run ids named their slot. */
function legacyDerivedId(job: string, key: string): string {
  return `run_${createHash('sha256').update(job).update('\u0000').update(key).digest('base64url').slice(0, 27)}`;
}
