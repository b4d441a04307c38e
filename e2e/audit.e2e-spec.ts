import { ApiModule } from '@chronicle/api';
import { ProjectorModule } from '@chronicle/projector';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import {
  apiClient,
  createTeam,
  graphqlClient,
  startApp,
  type ApiClient,
  type RunningApp,
  type TeamClients,
} from './support';

const ADMIN_TOKEN = 'e2e-admin-token-audit-0123456789ab';

interface AuditItem {
  streamId: string;
  revision: number;
  type: string;
  recordedAt: string;
  actor: string | null;
  correlationId: string | null;
  team: string | null;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}
interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** GET /v1/audit: the log's events with their actors, newest first, each team kept to its own streams. */
describe('the audit trail (GET /v1/audit)', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let admin: ApiClient;
  let billing: TeamClients;
  let growth: TeamClients;
  let runId: string;

  const audit = (client: ApiClient, query = ''): Promise<{ status: number; body: Page<AuditItem> }> =>
    client.get<Page<AuditItem>>(`/v1/audit${query}`);
  /** Every page, following nextCursor. */
  const allPages = async (client: ApiClient, query: string, limit: number): Promise<AuditItem[]> => {
    const items: AuditItem[] = [];
    let cursor: string | null = null;
    do {
      const after: string = cursor === null ? '' : `&cursor=${cursor}`;
      const page = await audit(client, `?limit=${limit}${query}${after}`);
      expect(page.status).toBe(200);
      items.push(...page.body.items);
      cursor = page.body.nextCursor;
    } while (cursor !== null);
    return items;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], ADMIN_TOKEN);
    admin = apiClient(app.url, ADMIN_TOKEN);
    billing = await createTeam(app.url, ADMIN_TOKEN, 'billing', ['billing']);
    growth = await createTeam(app.url, ADMIN_TOKEN, 'growth', ['growth']);
    expect((await billing.team.put('/v1/jobs/billing.export', { queue: 'billing' })).status).toBe(201);
    expect((await growth.team.put('/v1/jobs/growth.digest', { queue: 'growth' })).status).toBe(201);
    runId = (await billing.team.post<{ runId: string }>('/v1/jobs/billing.export/runs', { payload: { month: 11 } }))
      .body.runId;
    const lease = await billing.worker.post<{ leases: Array<{ fencingToken: number }> }>('/v1/lease', {
      queues: ['billing'],
      max: 1,
      workerId: 'worker-7',
      // As a worker asks: a claim that meets the run still locked by another transaction waits for it.
      waitSeconds: 5,
    });
    expect(lease.body.leases).toHaveLength(1);
    // Lease and completion recorded apart, so that an instant between them exists (the as-of test).
    const leasedAt = Date.now();
    await waitFor(() => Date.now() > leasedAt + 2, { description: 'the clock to move on' });
    const done = await billing.worker.post(`/v1/runs/${runId}/complete`, {
      fencingToken: lease.body.leases[0]!.fencingToken,
      outcome: 'success',
    });
    expect(done.status).toBe(200);
    // A run's events are read from the log; the jobs' and teams' from the audit index, a projection: wait
    // until it holds the last job's definition.
    await waitFor(async () => (await audit(admin, `?stream=run-${runId}`)).body.items?.length === 3, {
      description: "the run's three events in the audit trail",
    });
    await waitFor(async () => (await audit(admin, '?stream=job-growth.digest')).body.items?.length === 1, {
      description: "the last job's definition in the audit index",
    });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it("shows a run's decisions newest first, each with its actor and data, as the log holds them", async () => {
    const { status, body } = await audit(admin, `?stream=run-${runId}`);
    expect(status).toBe(200);
    expect(body.items.map((e) => [e.type, e.revision, e.actor, e.team])).toEqual([
      ['RunSucceeded', 2, 'worker:billing:worker-7', 'billing'],
      ['RunLeased', 1, 'worker:billing:worker-7', 'billing'],
      ['RunScheduled', 0, billing.teamActor, 'billing'],
    ]);
    expect(body.items[2]!.data).toMatchObject({ runId, job: 'billing.export', payload: { month: 11 } });
    const history = (
      await billing.team.get<{ events: Array<{ type: string; data: unknown }> }>(`/v1/runs/${runId}/events`)
    ).body.events;
    expect(body.items.map((e) => e.data).reverse()).toEqual(history.map((e) => e.data));
    expect(body.nextCursor).toBeNull();
  });

  it('filters by actor, type and time, and pages newest first without repeating or skipping', async () => {
    // One team's events: the scheduler's canaries record events of their own meanwhile, under their own team.
    const everything = await allPages(admin, '&team=billing', 500);
    const recorded = everything.map((e) => Date.parse(e.recordedAt));
    expect(recorded).toEqual([...recorded].sort((a, b) => b - a));
    expect(await allPages(admin, '&team=billing', 2)).toEqual(everything);

    const leased = (await audit(admin, '?type=RunLeased')).body.items;
    expect(leased.map((e) => e.streamId)).toEqual([`run-${runId}`]);
    const byWorker = (await audit(admin, `?actor=${encodeURIComponent('worker:billing:worker-7')}`)).body.items;
    expect(byWorker.map((e) => e.type)).toEqual(['RunSucceeded', 'RunLeased']);

    const leasedAt = leased[0]!.recordedAt;
    const since = await allPages(admin, `&team=billing&since=${leasedAt}`, 500);
    expect(since.every((e) => e.recordedAt >= leasedAt)).toBe(true);
    expect(since.map((e) => e.type)).toContain('RunLeased');
    const until = await allPages(admin, `&team=billing&until=${leasedAt}`, 500);
    expect(until.every((e) => e.recordedAt < leasedAt)).toBe(true);
    expect(until.length + since.length).toBe(everything.length);
  });

  it("keeps a team to its own streams' events, refuses it another team's, and lets the admin see all", async () => {
    const mine = await allPages(billing.team, '', 500);
    expect(mine.length).toBeGreaterThan(0);
    expect(new Set(mine.map((e) => e.team))).toEqual(new Set(['billing']));
    expect(mine.map((e) => e.streamId)).not.toContain('job-growth.digest');
    const everything = await allPages(admin, '', 500);
    expect(everything.map((e) => e.streamId)).toContain('job-growth.digest');
    expect((await audit(admin, '?team=growth')).body.items.map((e) => e.team)).toEqual(
      expect.arrayContaining(['growth']),
    );
    const refused = await billing.team.get('/v1/audit?team=growth');
    expect(refused.status).toBe(403);
    expect(refused.contentType).toMatch(/^application\/problem\+json/);
    expect((await billing.worker.get('/v1/audit')).status).toBe(403);
    expect((await apiClient(app.url).get('/v1/audit')).status).toBe(401);
  });

  it("records the admin's changes as events with the admin token as actor, and never a token", async () => {
    const grant = await admin.post('/v1/queues/shared/grants', { team: 'billing', weight: 3 });
    expect(grant.status).toBe(201);
    expect(
      (
        await admin.put('/v1/teams/billing/quotas', {
          enqueueRatePerSecond: null,
          enqueueBurst: null,
          maxPendingRuns: 100,
        })
      ).status,
    ).toBe(200);
    await waitFor(async () => (await audit(admin, '?type=TeamQuotasSet')).body.items.length === 1, {
      description: 'the quota change in the audit index',
    });
    const trail = await allPages(admin, '&stream=team-billing', 500);
    expect(trail.map((e) => e.type)).toEqual([
      'TeamQuotasSet',
      'QueueGranted',
      'TokenIssued',
      'TokenIssued',
      'TeamCreated',
    ]);
    const actors = new Set(trail.map((e) => e.actor));
    expect([...actors]).toHaveLength(1);
    expect([...actors][0]).toMatch(/^admin:token:tok_[0-9a-f]{16}$/);
    expect(trail[1]!.data).toEqual({ queue: 'shared', team: 'billing', weight: 3 });
    expect(trail[0]!.data).toMatchObject({ team: 'billing', maxPendingRuns: 100 });
    const issued = trail.filter((e) => e.type === 'TokenIssued').map((e) => e.data);
    expect(issued).toEqual([
      {
        tokenId: expect.stringMatching(/^tok_/),
        kind: 'worker',
        team: 'billing',
        queues: ['billing'],
        expiresAt: null,
      },
      { tokenId: expect.stringMatching(/^tok_/), kind: 'team', team: 'billing', queues: ['billing'], expiresAt: null },
    ]);
    expect(billing.teamActor).toBe(`team:billing:token:${String(issued[1]!['tokenId'])}`);
    // The same grant again changes nothing and records nothing.
    expect((await admin.post('/v1/queues/shared/grants', { team: 'billing', weight: 3 })).status).toBe(200);
    // No token in any event's data or metadata, anywhere in the log.
    const log = JSON.stringify(await allPages(admin, '', 500));
    for (const token of [billing.teamToken, billing.workerToken, growth.teamToken, ADMIN_TOKEN])
      expect(log).not.toContain(token);
    // The team sees its own stream's changes, too.
    expect((await allPages(billing.team, '&type=QueueGranted', 500)).map((e) => e.streamId)).toEqual(['team-billing']);
  });

  it("carries the request's id into the events it caused, as correlationId", async () => {
    const requestId = 'audit-e2e-request-0001';
    const enqueued = await billing.team.raw('POST', '/v1/jobs/billing.export/runs', {}, { 'x-request-id': requestId });
    expect(enqueued.status).toBe(201);
    const stream = `run-${(enqueued.body as { runId: string }).runId}`;
    await waitFor(async () => (await audit(admin, `?stream=${stream}`)).body.items.length === 1, {
      description: 'the new run in the audit index',
    });
    const [scheduled] = (await audit(admin, `?stream=${stream}`)).body.items;
    expect(scheduled).toMatchObject({ type: 'RunScheduled', correlationId: requestId, actor: billing.teamActor });
    expect(scheduled!.metadata['correlationId']).toBe(requestId);
  });

  describe('state as of an instant', () => {
    it("folds a run's events recorded by then, with the revision they reach, and 404 before it existed", async () => {
      const events = (await audit(admin, `?stream=run-${runId}`)).body.items.reverse();
      const [scheduledAt, leasedAt, succeededAt] = events.map((e) => e.recordedAt);
      expect(leasedAt! < succeededAt!).toBe(true); // apart: waited for in beforeAll
      const leased = await billing.team.get(`/v1/runs/${runId}?asOf=${leasedAt}`);
      expect(leased.status).toBe(200);
      expect(leased.body).toMatchObject({ runId, state: 'leased', attempt: 1, asOf: leasedAt, revision: 1 });
      expect((await billing.team.get(`/v1/runs/${runId}?asOf=${succeededAt}`)).body).toMatchObject({
        state: 'succeeded',
        revision: 2,
      });
      expect((await billing.team.get(`/v1/runs/${runId}?asOf=${scheduledAt}`)).body).toMatchObject({ revision: 0 });
      const before = new Date(Date.parse(scheduledAt!) - 1).toISOString();
      const absent = await billing.team.get<{ type: string }>(`/v1/runs/${runId}?asOf=${before}`);
      expect([absent.status, absent.body.type]).toEqual([404, '/problems/not-found']);
      // Another team's run is not there at any instant.
      expect((await growth.team.get(`/v1/runs/${runId}?asOf=${succeededAt}`)).status).toBe(404);
      const bad = await billing.team.get<{ type: string }>(`/v1/runs/${runId}?asOf=last-tuesday`);
      expect([bad.status, bad.body.type]).toEqual([400, '/problems/validation-error']);
    });

    it("shows a job's definition as it was, and every version with who changed which field", async () => {
      const firstDefined = (await audit(admin, '?stream=job-billing.export')).body.items.at(-1)!.recordedAt;
      await waitFor(() => Date.now() > Date.parse(firstDefined) + 1, { description: 'the clock to move on' });
      const changed = await billing.team.put('/v1/jobs/billing.export', {
        queue: 'billing',
        retry: { maxAttempts: 7, baseSeconds: 30, maxSeconds: 3600 },
        payload: { format: 'csv' },
      });
      expect(changed.status).toBe(200);
      const then = await billing.team.get(`/v1/jobs/billing.export?asOf=${firstDefined}`);
      expect(then.body).toMatchObject({ name: 'billing.export', version: 1, asOf: firstDefined, revision: 0 });
      expect((await billing.team.get('/v1/jobs/billing.export')).body).toMatchObject({
        version: 2,
        retry: { maxAttempts: 7 },
      });
      const before = new Date(Date.parse(firstDefined) - 1).toISOString();
      expect((await billing.team.get(`/v1/jobs/billing.export?asOf=${before}`)).status).toBe(404);

      const versions = await billing.team.get<{ versions: Array<Record<string, unknown>> }>(
        '/v1/jobs/billing.export/versions',
      );
      expect(versions.status).toBe(200);
      expect(versions.body.versions.map((v) => [v['version'], v['actor']])).toEqual([
        [1, billing.teamActor],
        [2, billing.teamActor],
      ]);
      expect(versions.body.versions[0]!['changes']).toContainEqual({ field: 'queue', after: 'billing' });
      // Definitions are recorded with their defaults: the change is exactly the fields that moved.
      expect(versions.body.versions[1]!['changes']).toEqual([
        { field: 'retry.maxAttempts', before: 3, after: 7 },
        { field: 'retry.maxSeconds', before: 1800, after: 3600 },
        { field: 'payload', before: null, after: { format: 'csv' } },
      ]);
      expect((await growth.team.get('/v1/jobs/billing.export/versions')).status).toBe(404);
      // Each run records the version of the definition it was made from.
      const newer = await billing.team.post<{ runId: string }>('/v1/jobs/billing.export/runs', {});
      expect((await billing.team.get(`/v1/runs/${newer.body.runId}`)).body).toMatchObject({ jobVersion: 2 });
      expect((await billing.team.get(`/v1/runs/${runId}`)).body).toMatchObject({ jobVersion: 1 });
    });
  });

  it('answers the same in GraphQL (auditEvents), with the same rules', async () => {
    const query = `query ($filter: AuditFilterInput, $first: Int) {
      auditEvents(filter: $filter, first: $first) { edges { cursor node { streamId revision type actor team recordedAt data } } pageInfo { hasNextPage endCursor } } }`;
    const rest = (await audit(admin, `?stream=run-${runId}`)).body.items;
    const answer = await graphqlClient(app.url, ADMIN_TOKEN)<{
      auditEvents: { edges: Array<{ node: Record<string, unknown> }>; pageInfo: { hasNextPage: boolean } };
    }>(query, { filter: { stream: `run-${runId}` } });
    expect(answer.errors).toBeUndefined();
    expect(answer.data!.auditEvents.edges.map((e) => e.node)).toEqual(
      rest.map(({ streamId, revision, type, actor, team, recordedAt, data }) => ({
        streamId,
        revision,
        type,
        actor,
        team,
        recordedAt,
        data,
      })),
    );
    const refused = await graphqlClient(app.url, billing.teamToken)(query, { filter: { team: 'growth' } });
    expect(refused.errors?.[0]?.extensions).toEqual({ code: 'forbidden', status: 403 });
  });

  it.each([
    ['?cursor=not-a-cursor', 'cursor'],
    ['?since=yesterday', 'since'],
    ['?limit=501', 'limit'],
    ['?type=Run%20Dead', 'type'],
  ])('answers %s with a validation problem naming the parameter', async (query, field) => {
    const answer = await admin.get<{ type: string; detail: string }>(`/v1/audit${query}`);
    expect(answer.status).toBe(400);
    expect(answer.body.type).toBe('/problems/validation-error');
    expect(answer.body.detail).toContain(field);
  });
});
