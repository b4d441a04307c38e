import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { createTeam, graphqlClient, startApp, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-hostile-0123456789';
const KB = 1024;
const MB = 1024 * KB;

/** JSON nested `depth` levels deep: `[[[…]]]`. */
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/** Bad input gets a clear answer: never a 500, never a hang, and nothing written. */
describe('hostile input', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let team: TeamClients;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    team = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
    expect((await team.team.put('/v1/jobs/ops.task', { queue: 'ops' })).status).toBe(201);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('answers with security headers, and no cross-origin access unless configured', async () => {
    const answer = await fetch(`${app.url}/v1/jobs`, { headers: { authorization: `Bearer ${team.teamToken}` } });
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
    expect(answer.headers.get('x-powered-by')).toBeNull();
    const preflight = {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    };
    expect((await fetch(`${app.url}/v1/jobs`, preflight)).headers.get('access-control-allow-origin')).toBeNull();

    const open = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN, undefined, {
      CORS_ORIGINS: 'https://ops.example.com',
    });
    try {
      const allowed = await fetch(`${open.url}/v1/jobs`, {
        ...preflight,
        headers: { ...preflight.headers, origin: 'https://ops.example.com' },
      });
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://ops.example.com');
      expect((await fetch(`${open.url}/v1/jobs`, preflight)).headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await open.close();
    }
  });

  it.each([
    ['PUT', '/v1/jobs/ops.deep', (p: string) => `{"queue":"ops","payload":${p}}`, 'team'],
    ['POST', '/v1/jobs/ops.task/runs', (p: string) => `{"payload":${p}}`, 'team'],
    ['POST', '/v1/runs:batch', (p: string) => `{"runs":[{"job":"ops.task","payload":${p}}]}`, 'team'],
    ['POST', '/v1/lease', (p: string) => `{"queues":["ops"],"max":1,"workerId":${p}}`, 'worker'],
    [
      'POST',
      '/graphql',
      (p: string) =>
        `{"query":"mutation($p: JSON) { enqueueRun(job: \\"ops.task\\", payload: $p) { id } }","variables":{"p":${p}}}`,
      'team',
    ],
  ] as const)('%s %s: a payload nested 5,000 deep is a 400 problem, not a 500', async (method, path, body, who) => {
    const token = who === 'team' ? team.teamToken : team.workerToken;
    const response = await fetch(`${app.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body(nested(5000)),
    });
    // Refused before it is parsed, GraphQL's request too: the body is not one the API takes.
    expect([response.status, response.headers.get('content-type')]).toEqual([
      400,
      expect.stringMatching(/problem\+json/),
    ]);
    expect(await response.json()).toMatchObject({
      type: '/problems/validation-error',
      detail: 'the request body nests deeper than 64 levels',
    });
    expect(await db.log.query("SELECT 1 FROM events WHERE stream_key = es_stream_key('job-ops.deep')")).toMatchObject({
      rowCount: 0,
    });
  });

  // Each NUL went on to PostgreSQL as a lookup's parameter, which its text cannot hold: a 500.
  it.each([
    ['DELETE', '/v1/tokens/a%00b', undefined, 'admin'],
    ['DELETE', '/v1/teams/ops/tokens/a%00b', undefined, 'team'],
    ['GET', '/v1/teams/a%00b/tokens', undefined, 'admin'],
    ['GET', '/v1/teams/a%00b/quotas', undefined, 'admin'],
    ['GET', '/v1/audit?actor=a%00b', undefined, 'team'],
    ['POST', '/v1/dlq:replay', '{"error":"a\\u0000b"}', 'team'],
    ['POST', '/v1/runs/run_a%00b/complete', '{"fencingToken":1,"outcome":"success"}', 'worker'],
    ['POST', '/v1/runs/run_a%00b/heartbeat', '{"fencingToken":1}', 'worker'],
  ] as const)('%s %s: a NUL is a 400 problem, not a 500', async (method, path, body, who) => {
    const token = who === 'admin' ? ADMIN_TOKEN : who === 'team' ? team.teamToken : team.workerToken;
    const response = await fetch(`${app.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    });
    expect([response.status, await response.json()]).toEqual([
      400,
      expect.objectContaining({
        type: '/problems/validation-error',
        detail: 'the request holds a NUL character (U+0000), which no name, id or text here can hold',
      }),
    ]);
  });

  it('GraphQL: a NUL in a filter is a validation-error, not an internal one', async () => {
    const graphql = graphqlClient(app.url, team.teamToken);
    for (const query of [
      '{ auditEvents(filter: { actor: "a\\u0000b" }) { edges { cursor } } }',
      '{ queueHistory(queue: "a\\u0000b") { minute } }',
    ])
      expect((await graphql(query)).errors?.map((e) => e.extensions)).toEqual([
        { code: 'validation-error', status: 400 },
      ]);
  });

  it.each([
    ['POST', '/v1/teams', 64 * KB, '64 KB'],
    ['POST', '/v1/lease', 64 * KB, '64 KB'],
    ['POST', '/v1/jobs/ops.task/runs', 320 * KB, '320 KB'],
    ['POST', '/graphql', 320 * KB, '320 KB'],
    ['POST', '/v1/runs:batch', 16 * MB, '16 MB'],
  ] as const)('%s %s: a body over its %i-byte limit is a 413 naming the limit', async (method, path, limit, shown) => {
    const over = await fetch(`${app.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${team.teamToken}`, 'content-type': 'application/json' },
      body: `{"padding":"${'x'.repeat(limit)}"}`,
    });
    expect([over.status, await over.json()]).toEqual([
      413,
      expect.objectContaining({
        type: '/problems/payload-too-large',
        detail: `the request body is over the ${shown} this endpoint takes`,
      }),
    ]);
  });

  it('takes a batch of many payloads that no single-payload call would', async () => {
    const runs = Array.from({ length: 8 }, (_, i) => ({ job: 'ops.task', payload: { i, blob: 'x'.repeat(200 * KB) } }));
    const batch = await team.team.post<{ runs: unknown[] }>('/v1/runs:batch', { runs });
    expect(batch.status).toBe(200);
    expect(batch.body.runs).toHaveLength(8);
    // One payload over 256 KB is still the handler's 413, with its own words.
    const tooLarge = await team.team.post('/v1/jobs/ops.task/runs', { payload: { blob: 'x'.repeat(300 * KB) } });
    expect([tooLarge.status, tooLarge.body]).toEqual([
      413,
      expect.objectContaining({ detail: expect.stringMatching(/^the payload is \d+ bytes; at most 262144/) }),
    ]);
  });
});
