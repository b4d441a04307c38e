import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { apiClient, type ApiClient, type ApiResponse } from './support/api-client';
import { startApp, type RunningApp } from './support/start-app';
import { createTeam, type TeamClients } from './support/team-tokens';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

describe('team quotas over HTTP', () => {
  let db: TestDatabase;
  // Two API processes on one database: the bucket and the pending count live in PostgreSQL.
  let apps: RunningApp[];
  let admin: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    apps = [
      await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN),
      await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN),
    ];
    admin = apiClient(apps[0]!.url, ADMIN_TOKEN);
  });
  afterAll(async () => {
    for (const app of apps ?? []) await app.close();
    await db?.drop();
  });

  /** A team with one job on its own queue, and its quotas set by the admin. */
  const limitedTeam = async (
    id: string,
    quotas: Record<string, unknown>,
  ): Promise<TeamClients & { other: ApiClient }> => {
    const clients = await createTeam(apps[0]!.url, ADMIN_TOKEN, id, [id]);
    expect((await clients.team.put(`/v1/jobs/${id}.work`, { queue: id })).status).toBe(201);
    expect((await admin.put(`/v1/teams/${id}/quotas`, quotas)).status).toBe(200);
    const token = (await admin.post<{ token: string }>(`/v1/teams/${id}/tokens`, { kind: 'team', queues: [id] })).body
      .token;
    return { ...clients, other: apiClient(apps[1]!.url, token) };
  };
  const scheduledEvents = async (team: string): Promise<number> =>
    (
      await db.log.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM events WHERE event_type = 'RunScheduled' AND data->>'team' = $1",
        [team],
      )
    ).rows[0]!.n;
  const pendingRows = async (team: string): Promise<number> =>
    (
      await db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM runs WHERE team = $1 AND state IN ('scheduled', 'retry_wait', 'leased')",
        [team],
      )
    ).rows[0]!.n;
  const batch = (
    client: ApiClient,
    team: string,
    n: number,
    keyPrefix?: string,
  ): Promise<ApiResponse<{ runs: Array<{ runId: string; created: boolean }> }>> =>
    client.post('/v1/runs:batch', {
      runs: Array.from({ length: n }, (_, i) => ({
        job: `${team}.work`,
        ...(keyPrefix === undefined ? {} : { idempotencyKey: `${keyPrefix}-${i}` }),
      })),
    });
  const expectQuotaExceeded = (response: ApiResponse, quota: string): number => {
    expect(response.status).toBe(429);
    expect(response.contentType).toMatch(/application\/problem\+json/);
    expect(response.body).toMatchObject({ type: '/problems/quota-exceeded', status: 429, quota });
    const retryAfter = response.headers.get('retry-after');
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
    return Number(retryAfter);
  };

  describe('the admin reads and sets quotas', () => {
    it('starts unlimited, sets each limit, shows the default burst, and clears them again', async () => {
      await createTeam(apps[0]!.url, ADMIN_TOKEN, 'settings', ['settings']);
      const unlimited = {
        team: 'settings',
        enqueueRatePerSecond: null,
        enqueueBurst: null,
        maxPendingRuns: null,
        leaseRate: null,
      };
      expect((await admin.get('/v1/teams/settings/quotas')).body).toEqual(unlimited);
      const set = await admin.put('/v1/teams/settings/quotas', {
        enqueueRatePerSecond: 2.5,
        enqueueBurst: null,
        maxPendingRuns: 500,
      });
      expect([set.status, set.body]).toEqual([
        200,
        { team: 'settings', enqueueRatePerSecond: 2.5, enqueueBurst: 3, maxPendingRuns: 500, leaseRate: null },
      ]);
      expect((await admin.get('/v1/teams/settings/quotas')).body).toEqual({
        team: 'settings',
        enqueueRatePerSecond: 2.5,
        enqueueBurst: 3,
        maxPendingRuns: 500,
        leaseRate: null,
      });
      await admin.put('/v1/teams/settings/quotas', { enqueueRatePerSecond: 0.5, enqueueBurst: 40 });
      expect((await admin.get('/v1/teams/settings/quotas')).body).toEqual({
        team: 'settings',
        enqueueRatePerSecond: 0.5,
        enqueueBurst: 40,
        maxPendingRuns: null,
        leaseRate: null,
      });
      expect(
        (
          await admin.put('/v1/teams/settings/quotas', {
            enqueueRatePerSecond: null,
            enqueueBurst: null,
            maxPendingRuns: null,
          })
        ).body,
      ).toEqual(unlimited);
      expect((await admin.get('/v1/teams/settings/quotas')).body).toEqual(unlimited);
      expect((await db.pool.query("SELECT 1 FROM team_quotas WHERE team = 'settings'")).rowCount).toBe(0);
    });

    it('keeps setting quotas for the admin: a team reads its own, and gets 403 setting them', async () => {
      const { team, worker } = await createTeam(apps[0]!.url, ADMIN_TOKEN, 'sneaky', ['sneaky']);
      expect((await team.get('/v1/teams/sneaky/quotas')).body).toMatchObject({ team: 'sneaky', maxPendingRuns: null });
      for (const response of [
        await team.put('/v1/teams/sneaky/quotas', { maxPendingRuns: 1_000 }),
        await team.get('/v1/teams/settings/quotas'),
        await worker.get('/v1/teams/sneaky/quotas'),
        await worker.put('/v1/teams/sneaky/quotas', {}),
      ]) {
        expect(response.status).toBe(403);
        expect(response.body).toMatchObject({ type: '/problems/forbidden' });
      }
      expect((await admin.get('/v1/teams/sneaky/quotas')).body).toMatchObject({ maxPendingRuns: null });
    });

    it('refuses bad input with a 400 problem and changes nothing', async () => {
      await createTeam(apps[0]!.url, ADMIN_TOKEN, 'strict', ['strict']);
      for (const body of [
        { enqueueRatePerSecond: -1 },
        { enqueueRatePerSecond: 0 },
        { enqueueRatePerSecond: '5' },
        { enqueueRatePerSecond: 1, enqueueBurst: 1.5 },
        { enqueueRatePerSecond: 1, enqueueBurst: 0 },
        { enqueueBurst: 10 },
        { maxPendingRuns: 0 },
        { maxPendingRuns: 10, maxRunning: 3 },
      ]) {
        const response = await admin.put('/v1/teams/strict/quotas', body);
        expect([JSON.stringify(body), response.status]).toEqual([JSON.stringify(body), 400]);
        expect(response.body).toMatchObject({ type: '/problems/validation-error' });
      }
      expect((await admin.get('/v1/teams/strict/quotas')).body).toMatchObject({
        enqueueRatePerSecond: null,
        maxPendingRuns: null,
      });
    });

    it('answers 404 for a team that does not exist', async () => {
      expect((await admin.get('/v1/teams/nobody/quotas')).body).toMatchObject({
        status: 404,
        type: '/problems/not-found',
      });
      expect((await admin.put('/v1/teams/nobody/quotas', { maxPendingRuns: 5 })).body).toMatchObject({
        status: 404,
        type: '/problems/not-found',
      });
    });
  });

  describe('enqueue rate', () => {
    it('admits exactly the burst at a tiny rate, then 429 with Retry-After; a repeated Idempotency-Key still answers', async () => {
      const { team, worker, other } = await limitedTeam('rate', { enqueueRatePerSecond: 0.001, enqueueBurst: 20 });
      const statuses: number[] = [];
      const created: string[] = [];
      for (let n = 0; n < 30; n++) {
        // Alternate the two API processes: one bucket.
        const response = await (n % 2 === 0 ? team : other).post<{ runId: string }>(
          '/v1/jobs/rate.work/runs',
          {},
          { 'idempotency-key': `rate-${n}` },
        );
        statuses.push(response.status);
        if (response.status === 201) created.push(response.body.runId);
        else expect(expectQuotaExceeded(response, 'enqueueRatePerSecond')).toBeGreaterThanOrEqual(990); // a token every 1,000 s
      }
      expect(statuses).toEqual([...Array<number>(20).fill(201), ...Array<number>(10).fill(429)]);
      expect(await scheduledEvents('rate')).toBe(20);
      // A run that exists costs nothing and comes back as before.
      const again = await team.post<{ runId: string }>('/v1/jobs/rate.work/runs', {}, { 'idempotency-key': 'rate-0' });
      expect([again.status, again.body.runId]).toEqual([200, created[0]]);
      expectQuotaExceeded(await batch(team, 'rate', 1), 'enqueueRatePerSecond');
      // What a worker can lease: the same 20 runs.
      const leased = await worker.post<{ leases: Array<{ runId: string }> }>('/v1/lease', {
        queues: ['rate'],
        max: 100,
      });
      expect(leased.body.leases.map((l) => l.runId).sort()).toEqual([...created].sort());
      for (const runId of created) expect((await team.get(`/v1/runs/${runId}`)).status).toBe(200);
      expect(await scheduledEvents('rate')).toBe(20);
    });

    it('takes tokens atomically: 10 concurrent batches of 3 against a burst of 20 admit exactly 6', async () => {
      const { team, other } = await limitedTeam('burst', { enqueueRatePerSecond: 0.001, enqueueBurst: 20 });
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) => batch(i % 2 === 0 ? team : other, 'burst', 3)),
      );
      expect(responses.filter((r) => r.status === 200)).toHaveLength(6);
      for (const refused of responses.filter((r) => r.status !== 200))
        expectQuotaExceeded(refused, 'enqueueRatePerSecond');
      expect(await scheduledEvents('burst')).toBe(18);
    });
  });

  describe('pending runs', () => {
    it('never lets concurrent batches together exceed maxPendingRuns', async () => {
      const { team, other } = await limitedTeam('pending', { maxPendingRuns: 25 });
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) => batch(i % 2 === 0 ? team : other, 'pending', 5)),
      );
      expect(responses.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429]);
      for (const refused of responses.filter((r) => r.status === 429))
        expect(expectQuotaExceeded(refused, 'maxPendingRuns')).toBe(5);
      expect(await pendingRows('pending')).toBe(25);
      expect(await scheduledEvents('pending')).toBe(25);
    });

    it('makes room as runs finish', async () => {
      const { team, worker } = await limitedTeam('draining', { maxPendingRuns: 3 });
      expect((await batch(team, 'draining', 3)).status).toBe(200);
      expectQuotaExceeded(await team.post('/v1/jobs/draining.work/runs', {}), 'maxPendingRuns');
      const { body } = await worker.post<{ leases: Array<{ runId: string; fencingToken: number }> }>('/v1/lease', {
        queues: ['draining'],
        max: 1,
      });
      // Leased is still pending; succeeded is not.
      expectQuotaExceeded(await team.post('/v1/jobs/draining.work/runs', {}), 'maxPendingRuns');
      await worker.post(`/v1/runs/${body.leases[0]!.runId}/complete`, {
        fencingToken: body.leases[0]!.fencingToken,
        outcome: 'success',
      });
      expect((await team.post('/v1/jobs/draining.work/runs', {})).status).toBe(201);
      expect(await pendingRows('draining')).toBe(3);
    });
  });

  describe('a batch is all or nothing', () => {
    it('creates none of a batch that does not fit, and admits one whose new runs do', async () => {
      const { team } = await limitedTeam('atomic', {
        maxPendingRuns: 10,
        enqueueRatePerSecond: 0.001,
        enqueueBurst: 100,
      });
      expect((await batch(team, 'atomic', 8, 'first')).status).toBe(200);
      const over = await batch(team, 'atomic', 5, 'second');
      expectQuotaExceeded(over, 'maxPendingRuns');
      expect(over.body).toMatchObject({ detail: expect.stringContaining('8 pending runs') });
      expect(await scheduledEvents('atomic')).toBe(8);
      expect(
        (
          await db.pool.query(
            "SELECT 1 FROM run_listing WHERE team = 'atomic' AND definition->>'idempotencyKey' LIKE 'second-%'",
          )
        ).rowCount,
      ).toBe(0);
      // The same 8 again plus 2 new: only the new ones count.
      const mixed = await team.post<{ runs: Array<{ created: boolean }> }>('/v1/runs:batch', {
        runs: [
          ...Array.from({ length: 8 }, (_, i) => ({ job: 'atomic.work', idempotencyKey: `first-${i}` })),
          { job: 'atomic.work', idempotencyKey: 'third-0' },
          { job: 'atomic.work', idempotencyKey: 'third-1' },
        ],
      });
      expect(mixed.status).toBe(200);
      expect(mixed.body.runs.filter((r) => r.created)).toHaveLength(2);
      // A batch larger than the limit can never fit, and says so.
      const never = await batch(team, 'atomic', 11);
      expectQuotaExceeded(never, 'maxPendingRuns');
      expect(never.body).toMatchObject({ detail: expect.stringContaining('11 runs are more than') });
      expect(await scheduledEvents('atomic')).toBe(10);
    });

    it('holds for a backfill too', async () => {
      const { team } = await limitedTeam('backfill', { maxPendingRuns: 3 });
      await team.put('/v1/jobs/backfill.hourly', {
        queue: 'backfill',
        schedule: { cron: '0 * * * *', timeZone: 'UTC', jitterSeconds: 0 },
      });
      const range = (hours: number): { from: string; to: string } => ({
        from: '2026-01-01T00:00:00Z',
        to: `2026-01-01T0${hours - 1}:00:00Z`,
      });
      expectQuotaExceeded(await team.post('/v1/jobs/backfill.hourly:backfill', range(4)), 'maxPendingRuns');
      expect(await scheduledEvents('backfill')).toBe(0);
      expect(
        (await team.post<{ runs: unknown[] }>('/v1/jobs/backfill.hourly:backfill', range(3))).body.runs,
      ).toHaveLength(3);
      expect(await scheduledEvents('backfill')).toBe(3);
    });
  });
});
