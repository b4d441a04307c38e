import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { apiClient, createTeam, startApp, type ApiClient, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-ratelimit-012345678';

/** Guessing tokens: an address that fails to authenticate 20 times a minute waits, and it is counted. */
describe('failed authentications, rate-limited per client address', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let ops: TeamClients;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    ops = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
    expect((await ops.team.get('/v1/jobs')).status).toBe(200); // known to the API from here on
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('answers 401 twenty times, then 429 with Retry-After; a token the API knows still passes', async () => {
    for (let i = 0; i < 20; i++) {
      const guess = await apiClient(app.url, `sch_team_guess-${i}`).get('/v1/jobs');
      expect(guess.status).toBe(401);
    }
    const limited = await apiClient(app.url, 'sch_team_guess-21').get<{ type: string }>('/v1/jobs');
    expect([limited.status, limited.body.type]).toEqual([429, '/problems/rate-limited']);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // No token at all is a failure too, and GraphQL is behind the same door.
    expect((await apiClient(app.url).get('/v1/jobs')).status).toBe(429);
    const graphql = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { authorization: 'Bearer sch_team_guess-gql', 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ queues { queue } }' }),
    });
    expect(graphql.status).toBe(429);
    expect((await ops.team.get('/v1/jobs')).status).toBe(200);

    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    expect(metrics).toMatch(/^chronicle_auth_failures_total\{reason="unknown"\} 20$/m);
    expect(metrics).toMatch(/^chronicle_auth_rate_limited_total [3-9]$/m);
  });
});

/**
 * Behind one NAT, or on one host, a worker left with a revoked token keeps retrying: it is made to wait,
 * and the other workers at that address go on.
 */
describe('failed authentications, rate-limited per presented token too', () => {
  let db: TestDatabase;
  let app: RunningApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('refuses a revoked token 401 twenty times, then 429; a valid token from the same address still passes', async () => {
    const nat = await createTeam(app.url, ADMIN_TOKEN, 'nat', ['nat']);
    const admin = apiClient(app.url, ADMIN_TOKEN);
    const issued = await admin.post<{ token: string; id: string }>('/v1/teams/nat/tokens', {
      kind: 'worker',
      queues: ['nat'],
    });
    expect(issued.status).toBe(201);
    expect((await admin.raw('DELETE', `/v1/teams/nat/tokens/${issued.body.id}`)).status).toBe(200);
    const lease = (client: ApiClient, workerId: string): Promise<{ status: number; body: { detail?: string } }> =>
      client.post<{ detail?: string }>('/v1/lease', { queues: ['nat'], max: 1, workerId, waitSeconds: 0 });

    const revoked = apiClient(app.url, issued.body.token);
    const answers: number[] = [];
    for (let i = 0; i < 25; i++) answers.push((await lease(revoked, 'worker-revoked')).status);
    expect(answers).toEqual([...Array<number>(20).fill(401), ...Array<number>(5).fill(429)]);
    expect((await lease(revoked, 'worker-revoked')).body.detail).toMatch(/with this token/);

    // The address failed 20 times too: the other worker's token, never seen by this API before, passes.
    expect((await lease(nat.worker, 'worker-good')).status).toBe(200);
    expect((await nat.team.get('/v1/jobs')).status).toBe(200);
    // A token that is not valid, and no token, from that address: 429 until the minute is over.
    expect((await lease(apiClient(app.url, 'sch_worker_not-a-token'), 'worker-guess')).status).toBe(429);
    expect((await apiClient(app.url).get('/v1/jobs')).status).toBe(429);

    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    expect(metrics).toMatch(/^chronicle_auth_failures_total\{reason="unknown"\} 20$/m);
  });
});
