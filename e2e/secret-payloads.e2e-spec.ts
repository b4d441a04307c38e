import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { createTeam, graphqlClient, startApp, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-secrets-0123456789a';
const PASSWORD = 'Winter2026!-do-not-echo';

/** Payloads that carry credentials are refused, saying where and what, never echoing them. */
describe('secrets kept out of payloads', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let ops: TeamClients;
  const eventCount = async (): Promise<number> =>
    (await db.log.query<{ n: number }>('SELECT count(*)::int AS n FROM events')).rows[0]!.n;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    ops = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
    expect((await ops.team.put('/v1/jobs/ops.upload', { queue: 'ops' })).status).toBe(201);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it.each([
    ['POST', '/v1/jobs/ops.upload/runs', { payload: { sftp: { password: PASSWORD } } }, 'payload.sftp.password'],
    [
      'POST',
      '/v1/runs:batch',
      { runs: [{ job: 'ops.upload' }, { job: 'ops.upload', payload: { password: PASSWORD } }] },
      'runs[1].payload.password',
    ],
    [
      'PUT',
      '/v1/jobs/ops.leaky',
      { queue: 'ops', payload: { db: `postgres://app:${PASSWORD}@db:5432/app` } },
      'payload.db',
    ],
  ])(
    '%s %s: 400 secret-in-payload naming %s, not the value, and nothing written',
    async (method, path, body, field) => {
      const before = await eventCount();
      const answer = await ops.team.raw<{ type: string; detail: string; field: string }>(method, path, body);
      expect([answer.status, answer.body.type, answer.body.field]).toEqual([400, '/problems/secret-in-payload', field]);
      expect(JSON.stringify(answer.body)).not.toContain(PASSWORD);
      expect(await eventCount()).toBe(before);
    },
  );

  it('refuses it in GraphQL too, with the same code', async () => {
    const answer = await graphqlClient(app.url, ops.teamToken)(
      'mutation ($p: JSON) { enqueueRun(job: "ops.upload", payload: $p) { id } }',
      { p: { token: 'ghp_a1B2c3D4e5F6g7H8i9J0a1B2c3D4e5F6g7H8' } },
    );
    expect(answer.errors?.[0]?.extensions).toMatchObject({ code: 'secret-in-payload', status: 400 });
    expect(JSON.stringify(answer)).not.toContain('ghp_a1B2');
  });

  it('passes a payload that names its secret, and a path the job allows (recorded with its actor)', async () => {
    const named = await ops.team.post('/v1/jobs/ops.upload/runs', { payload: { sftp: { secretRef: 'ops/sftp' } } });
    expect(named.status).toBe(201);
    const allowed = await ops.team.put('/v1/jobs/ops.upload', { queue: 'ops', secretsAllowed: ['$.fixture'] });
    expect(allowed.status).toBe(200);
    const run = await ops.team.post('/v1/jobs/ops.upload/runs', { payload: { fixture: { password: PASSWORD } } });
    expect(run.status).toBe(201);
    const versions = await ops.team.get<{ versions: Array<{ actor: string; changes: unknown[] }> }>(
      '/v1/jobs/ops.upload/versions',
    );
    expect(versions.body.versions.at(-1)).toMatchObject({
      actor: ops.teamActor,
      changes: [{ field: 'secretsAllowed', after: ['$.fixture'] }],
    });
    const bad = await ops.team.put<{ type: string }>('/v1/jobs/ops.upload', {
      queue: 'ops',
      secretsAllowed: ['fixture'],
    });
    expect([bad.status, bad.body.type]).toEqual([400, '/problems/validation-error']);
  });
});
