import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { apiClient, createTeam, startApp, type RunningApp, type TeamClients } from './support';

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
