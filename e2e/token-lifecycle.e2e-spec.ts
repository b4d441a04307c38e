import { ApiModule } from '@chronicle/api';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { apiClient, createTeam, startApp, type ApiClient, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-tokens-0123456789ab';

interface Token {
  id: string;
  kind: string;
  team: string | null;
  queues: string[];
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

/** Tokens with a lifecycle: listed (never shown again), expiring, revoked within 5 s, rotated without a gap. */
describe('tokens with a lifecycle', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let admin: ApiClient;
  let billing: TeamClients;
  let growth: TeamClients;

  const issue = async (
    body: Record<string, unknown>,
  ): Promise<{ token: string; id: string; expiresAt: string | null }> => {
    const issued = await admin.post<{ token: string; id: string; expiresAt: string | null }>(
      '/v1/teams/billing/tokens',
      {
        kind: 'team',
        queues: ['billing'],
        ...body,
      },
    );
    expect(issued.status).toBe(201);
    return issued.body;
  };
  const works = async (token: string): Promise<boolean> =>
    (await apiClient(app.url, token).get('/v1/jobs')).status === 200;
  const tokensOf = async (client: ApiClient, team: string): Promise<Token[]> =>
    (await client.get<{ tokens: Token[] }>(`/v1/teams/${team}/tokens`)).body.tokens;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    admin = apiClient(app.url, ADMIN_TOKEN);
    billing = await createTeam(app.url, ADMIN_TOKEN, 'billing', ['billing']);
    growth = await createTeam(app.url, ADMIN_TOKEN, 'growth', ['growth']);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it("lists a team's tokens to the admin and to the team, with when each was last used, never the token", async () => {
    expect(await works(billing.teamToken)).toBe(true);
    const listed = await tokensOf(admin, 'billing');
    expect(listed.map((t) => t.kind)).toEqual(['team', 'worker']);
    expect(listed[0]).toMatchObject({ team: 'billing', queues: ['billing'], expiresAt: null, revokedAt: null });
    expect(listed[0]!.lastUsedAt).not.toBeNull();
    expect(`team:billing:token:${listed[0]!.id}`).toBe(billing.teamActor);
    expect(JSON.stringify(listed)).not.toContain(billing.teamToken);
    expect(JSON.stringify(listed)).not.toContain(billing.workerToken);
    expect(await tokensOf(billing.team, 'billing')).toEqual(await tokensOf(admin, 'billing'));
    expect((await growth.team.get('/v1/teams/billing/tokens')).status).toBe(403);
    expect((await billing.worker.get('/v1/teams/billing/tokens')).status).toBe(403);
    expect((await admin.get('/v1/teams/nobody/tokens')).status).toBe(404);
  });

  it('refuses a token from its expiry on, and an expiry in the past at issue', async () => {
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const short = await issue({ expiresAt });
    expect(short.expiresAt).toBe(expiresAt);
    expect(await works(short.token)).toBe(true);
    await waitFor(async () => !(await works(short.token)), {
      timeoutMs: 5000,
      description: 'the expired token refused',
    });
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    const answer = await apiClient(app.url, short.token).get<{ type: string }>('/v1/jobs');
    expect([answer.status, answer.body.type]).toEqual([401, '/problems/unauthorized']);

    const past = await admin.post<{ type: string; detail: string }>('/v1/teams/billing/tokens', {
      kind: 'team',
      queues: ['billing'],
      expiresAt: '2020-01-01T00:00:00Z',
    });
    expect([past.status, past.body.type]).toEqual([400, '/problems/validation-error']);
    expect(past.body.detail).toContain('expiresAt');
  });

  it('rotates a token without a gap: the new one works at once, the old one is refused within 5 s of its revocation', async () => {
    const old = await issue({});
    const fresh = await issue({});
    expect(await works(old.token)).toBe(true); // and now in the API's cache of callers
    expect(await works(fresh.token)).toBe(true);
    const revokedAt = Date.now();
    const revoked = await billing.team.raw<Token>('DELETE', `/v1/teams/billing/tokens/${old.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: old.id, revokedAt: expect.any(String) });
    await waitFor(async () => !(await works(old.token)), { timeoutMs: 6000, description: 'the revoked token refused' });
    expect(Date.now() - revokedAt).toBeLessThan(6000);
    expect(await works(fresh.token)).toBe(true);
    // Again: nothing changes, nothing recorded. Another team's token id is not found.
    expect((await admin.raw('DELETE', `/v1/teams/billing/tokens/${old.id}`)).status).toBe(200);
    expect((await admin.raw('DELETE', `/v1/teams/growth/tokens/${old.id}`)).status).toBe(404);

    const { rows } = await db.log.query<{ event_type: string; actor: string }>(
      "SELECT event_type, actor FROM events WHERE event_type = 'TokenRevoked' AND data->>'tokenId' = $1",
      [old.id],
    );
    expect(rows).toEqual([{ event_type: 'TokenRevoked', actor: billing.teamActor }]);
  });

  it('lists and revokes platform worker tokens for the admin only', async () => {
    const issued = await admin.post<{ token: string; id: string }>('/v1/tokens', {
      kind: 'worker',
      queues: ['billing'],
    });
    expect(issued.status).toBe(201);
    const listed = (await admin.get<{ tokens: Token[] }>('/v1/tokens')).body.tokens;
    expect(listed.map((t) => [t.id, t.team])).toEqual([[issued.body.id, null]]);
    expect((await billing.team.get('/v1/tokens')).status).toBe(403);
    expect((await admin.raw('DELETE', `/v1/tokens/${issued.body.id}`)).status).toBe(200);
    const worker = apiClient(app.url, issued.body.token);
    await waitFor(async () => (await worker.post('/v1/lease', { queues: ['billing'], max: 1 })).status === 401, {
      timeoutMs: 6000,
      description: 'the revoked platform token refused',
    });
  });
});
