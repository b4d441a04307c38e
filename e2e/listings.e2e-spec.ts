import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import {
  apiClient,
  createTeam,
  graphqlClient,
  startApp,
  type ApiClient,
  type GraphqlClient,
  type RunningApp,
  type TeamClients,
} from './support';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

interface RunItem {
  runId: string;
  job: string;
  state: string;
  dueAt: string;
  queue: string;
}
interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

describe('listings: GET /v1/jobs, GET /v1/runs and their GraphQL twins', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let admin: ApiClient;
  let billing: TeamClients;
  let growth: TeamClients;
  let gql: GraphqlClient;
  const hour = 3_600_000;
  /** The start of this hour: billing.daily's first run is ready, the others scheduled. */
  const base = Math.floor(Date.now() / hour) * hour;
  /** billing's runs as enqueued: billing.daily at base + i hours (i = 0..59), billing.hourly's 30 at base - (i + 1) hours. */
  const daily: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    admin = apiClient(app.url, ADMIN_TOKEN);
    billing = await createTeam(app.url, ADMIN_TOKEN, 'billing', ['billing', 'billing-slow']);
    growth = await createTeam(app.url, ADMIN_TOKEN, 'growth', ['growth']);
    gql = graphqlClient(app.url, billing.teamToken);
    for (const [name, queue] of [
      ['billing.daily', 'billing'],
      ['billing.hourly', 'billing-slow'],
      ['billing.audit', 'billing'],
    ] as const)
      expect([200, 201]).toContain((await billing.team.put(`/v1/jobs/${name}`, { queue })).status);
    expect((await growth.team.put('/v1/jobs/growth.signups', { queue: 'growth' })).status).toBe(201);
    const at = (ms: number): string => new Date(ms).toISOString();
    const batch = await billing.team.post<{ runs: Array<{ runId: string }> }>('/v1/runs:batch', {
      runs: [
        ...Array.from({ length: 60 }, (_, i) => ({ job: 'billing.daily', runAt: at(base + i * hour) })),
        ...Array.from({ length: 30 }, (_, i) => ({ job: 'billing.hourly', runAt: at(base - (i + 1) * hour) })),
      ],
    });
    expect(batch.status).toBe(200);
    daily.push(...batch.body.runs.slice(0, 60).map((r) => r.runId));
    expect((await growth.team.post('/v1/jobs/growth.signups/runs', { runAt: at(base) })).status).toBe(201);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  /** Every page of a REST listing, following nextCursor. */
  async function allPages<T>(client: ApiClient, path: string, between?: () => Promise<void>): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 100; pages++) {
      const separator = path.includes('?') ? '&' : '?';
      const { status, body }: { status: number; body: Page<T> } = await client.get<Page<T>>(
        cursor === null ? path : `${path}${separator}cursor=${encodeURIComponent(cursor)}`,
      );
      expect(status).toBe(200);
      items.push(...body.items);
      if (body.nextCursor === null) return items;
      cursor = body.nextCursor;
      await between?.();
    }
    throw new Error(`${path}: more than 100 pages`);
  }

  describe('GET /v1/jobs', () => {
    it("lists a team's own jobs by name, a page at a time, and by queue", async () => {
      const first =
        await billing.team.get<Page<{ name: string; version: number; paused: boolean }>>('/v1/jobs?limit=2');
      expect(first.body.items.map((j) => j.name)).toEqual(['billing.audit', 'billing.daily']);
      expect(first.body.items[0]).toMatchObject({ team: 'billing', queue: 'billing', version: 1, paused: false });
      const rest = await billing.team.get<Page<{ name: string }>>(`/v1/jobs?limit=2&cursor=${first.body.nextCursor}`);
      expect(rest.body).toEqual({ items: [expect.objectContaining({ name: 'billing.hourly' })], nextCursor: null });
      const slow = await billing.team.get<Page<{ name: string }>>('/v1/jobs?queue=billing-slow');
      expect(slow.body.items.map((j) => j.name)).toEqual(['billing.hourly']);
    });

    it("shows the admin every team's jobs, or one team's, and a team only its own", async () => {
      const all = await allPages<{ name: string }>(admin, '/v1/jobs?limit=1');
      expect(all.map((j) => j.name)).toEqual(['billing.audit', 'billing.daily', 'billing.hourly', 'growth.signups']);
      const growthOnly = await admin.get<Page<{ name: string }>>('/v1/jobs?team=growth');
      expect(growthOnly.body.items.map((j) => j.name)).toEqual(['growth.signups']);
      expect((await growth.team.get<Page<unknown>>('/v1/jobs')).body.items).toHaveLength(1);
      const other = await growth.team.get('/v1/jobs?team=billing');
      expect(other.status).toBe(403);
      expect(other.body).toMatchObject({ type: '/problems/forbidden' });
      expect((await billing.worker.get('/v1/jobs')).status).toBe(403);
      expect((await apiClient(app.url).get('/v1/jobs')).status).toBe(401);
    });

    it('agrees with GraphQL jobs, page for page', async () => {
      const answer = await gql<{
        jobs: { edges: Array<{ node: { name: string } }>; pageInfo: { hasNextPage: boolean } };
      }>('{ jobs(first: 2) { edges { node { name } } pageInfo { hasNextPage } } }');
      expect(answer.data!.jobs.edges.map((e) => e.node.name)).toEqual(['billing.audit', 'billing.daily']);
      expect(answer.data!.jobs.pageInfo.hasNextPage).toBe(true);
    });
  });

  describe('GET /v1/runs', () => {
    it('lists newest due first, filtered by job, queue, state and due window', async () => {
      const byJob = await allPages<RunItem>(billing.team, '/v1/runs?job=billing.daily&limit=7');
      expect(byJob.map((r) => r.runId)).toEqual([...daily].reverse());
      expect(byJob[0]).toMatchObject({ job: 'billing.daily', state: 'scheduled', queue: 'billing' });

      const window = await billing.team.get<Page<RunItem>>(
        `/v1/runs?dueAfter=${new Date(base - 2 * hour).toISOString()}&dueBefore=${new Date(base + 2 * hour).toISOString()}`,
      );
      expect(window.body.items.map((r) => r.dueAt)).toEqual(
        [base + hour, base, base - hour, base - 2 * hour].map((t) => new Date(t).toISOString()),
      );
      const slow = await allPages<RunItem>(billing.team, '/v1/runs?queue=billing-slow&limit=500');
      expect(slow).toHaveLength(30);
      expect(new Set(slow.map((r) => r.job))).toEqual(new Set(['billing.hourly']));

      // The past ones are ready, the future ones scheduled (ready is derived from time, as everywhere).
      const ready = await allPages<RunItem>(billing.team, '/v1/runs?state=ready&limit=500');
      const scheduled = await allPages<RunItem>(billing.team, '/v1/runs?state=scheduled&limit=500');
      expect(ready.length + scheduled.length).toBe(90);
      expect(ready.every((r) => Date.parse(r.dueAt) <= Date.now())).toBe(true);
      expect(ready.map((r) => r.state)).toEqual(ready.map(() => 'ready'));
      expect((await billing.team.get<Page<unknown>>('/v1/runs?state=dead')).body.items).toEqual([]);
    });

    it("keeps a team to its own runs; the admin sees every team's", async () => {
      const growthRuns = await allPages<RunItem>(growth.team, '/v1/runs');
      expect(growthRuns.map((r) => r.job)).toEqual(['growth.signups']);
      expect((await growth.team.get<Page<unknown>>('/v1/runs?job=billing.daily')).body.items).toEqual([]);
      expect((await growth.team.get('/v1/runs?team=billing')).status).toBe(403);
      expect((await billing.worker.get('/v1/runs')).status).toBe(403);
      const everyone = await allPages<RunItem>(admin, '/v1/runs?limit=40');
      expect(everyone).toHaveLength(91);
      // Newest due first across teams: the growth run (due at base) sits between billing's.
      const dues = everyone.map((r) => Date.parse(r.dueAt));
      expect(dues).toEqual([...dues].sort((a, b) => b - a));
      expect((await allPages<RunItem>(admin, '/v1/runs?team=growth')).map((r) => r.job)).toEqual(['growth.signups']);
    });

    it('refuses bad parameters with problem+json 400 naming them', async () => {
      for (const [query, detail] of [
        ['limit=501', /limit must not be greater than 500/],
        ['limit=0', /limit must not be less than 1/],
        ['state=running', /state must be one of the following values/],
        ['dueAfter=yesterday', /dueAfter must be a valid ISO 8601 date string/],
        ['job=a/b', /job must be a name/],
        ['cursor=bm9wZQ', /cursor is not a cursor this listing returned/],
        ['color=blue', /property color should not exist/],
      ] as const) {
        const response = await billing.team.get(`/v1/runs?${query}`);
        expect(response.status).toBe(400);
        expect(response.contentType).toMatch(/application\/problem\+json/);
        expect(response.body).toMatchObject({
          type: '/problems/validation-error',
          detail: expect.stringMatching(detail),
        });
      }
    });

    it('answers what GraphQL runs answers, backed by the same query', async () => {
      const rest = await billing.team.get<Page<RunItem>>('/v1/runs?queue=billing-slow&limit=10');
      const answer = await gql<{ runs: { edges: Array<{ cursor: string; node: { id: string; state: string } }> } }>(
        '{ runs(filter: {queue: "billing-slow"}, first: 10) { edges { cursor node { id state } } } }',
      );
      const edges = answer.data!.runs.edges;
      expect(edges.map((e) => e.node.id)).toEqual(rest.body.items.map((r) => r.runId));
      expect(edges.map((e) => e.node.state)).toEqual(rest.body.items.map((r) => r.state));
      // A cursor is the same in both: GraphQL's last edge continues the REST listing.
      expect(edges.at(-1)!.cursor).toBe(rest.body.nextCursor);
    });
  });

  describe('paging while runs change', () => {
    it('neither repeats nor skips a run while others are leased, completed, cancelled and enqueued', async () => {
      const churn = await createTeam(app.url, ADMIN_TOKEN, 'churn', ['churn']);
      const churnGql = graphqlClient(app.url, churn.teamToken);
      expect((await churn.team.put('/v1/jobs/churn.work', { queue: 'churn' })).status).toBe(201);
      const start = Date.now() - 10 * 60_000;
      const { body } = await churn.team.post<{ runs: Array<{ runId: string }> }>('/v1/runs:batch', {
        runs: Array.from({ length: 120 }, (_, i) => ({
          job: 'churn.work',
          runAt: new Date(start + i * 1000).toISOString(),
        })),
      });
      const existing = body.runs.map((r) => r.runId);
      let enqueued = 0;
      /** Between two pages: a worker leases and completes some runs, the team cancels one, two more are enqueued. */
      const change = async (): Promise<void> => {
        const leased = await churn.worker.post<{ leases: Array<{ runId: string; fencingToken: number }> }>(
          '/v1/lease',
          {
            queues: ['churn'],
            max: 6,
          },
        );
        const [toCancel, ...toComplete] = leased.body.leases;
        for (const { runId, fencingToken } of toComplete)
          await churn.worker.post(`/v1/runs/${runId}/complete`, { fencingToken, outcome: 'success' });
        if (toCancel !== undefined)
          await churn.worker.post(`/v1/runs/${toCancel.runId}/complete`, {
            fencingToken: toCancel.fencingToken,
            outcome: 'failure',
            error: 'try again',
          });
        const waiting = existing[existing.length - 1 - enqueued]!;
        await churn.team.post(`/v1/runs/${waiting}:cancel`);
        // One due now (newest: before the pages already read), one older than every run (after them).
        await churn.team.post('/v1/runs:batch', {
          runs: [
            { job: 'churn.work' },
            { job: 'churn.work', runAt: new Date(start - 60_000 - enqueued * 1000).toISOString() },
          ],
        });
        enqueued += 2;
      };

      const rest = await allPages<RunItem>(churn.team, '/v1/runs?limit=17', change);
      const restIds = rest.map((r) => r.runId);
      expect(new Set(restIds).size).toBe(restIds.length);
      expect(restIds).toEqual(expect.arrayContaining(existing));

      const seen: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const answer: { data: { runs: GqlPage } | null | undefined } = await churnGql<{ runs: GqlPage }>(
          'query ($after: String) { runs(first: 23, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }',
          { after },
        );
        seen.push(...answer.data!.runs.edges.map((e) => e.node.id));
        if (!answer.data!.runs.pageInfo.hasNextPage) break;
        after = answer.data!.runs.pageInfo.endCursor;
        await change();
      }
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toEqual(expect.arrayContaining(existing));
      expect(enqueued).toBeGreaterThan(10);
    });
  });
});

interface GqlPage {
  edges: Array<{ node: { id: string } }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}
