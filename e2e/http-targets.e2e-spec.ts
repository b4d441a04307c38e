import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiModule } from '@chronicle/api';
import { systemClock } from '@chronicle/platform';
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

const ADMIN_TOKEN = 'e2e-admin-token-http-targets-0123456789';

interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** What a receiver answers a call to a path: the n-th call (0-based) to it. */
type Answer = (n: number) => { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };

/** A team's HTTP endpoint, on a loopback address: what it was sent, and what it answers, by path. */
async function startReceiver(host: string): Promise<{
  url: string;
  received: Received[];
  answers: Map<string, Answer>;
  close: () => Promise<void>;
}> {
  const received: Received[] = [];
  const answers = new Map<string, Answer>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const n = received.filter((r) => r.path === path).length;
      received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      const answer = answers.get(path)?.(n) ?? { status: 200 };
      const send = (): void => {
        if (!response.destroyed) response.writeHead(answer.status, answer.headers).end(answer.body ?? '');
      };
      if (answer.delayMs === undefined) send();
      else setTimeout(send, answer.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://${host}:${port}`,
    received,
    answers,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Run {
  runId: string;
  state: string;
  attempt: number;
  lastError: string | null;
}
interface RunEvent {
  type: string;
  data: Record<string, unknown>;
  metadata: { actor: string };
}

/** The signature header's timestamp and its signatures. */
function signaturesOf(header: string | string[] | undefined): { t: string; v1: string[] } {
  const parts = String(header)
    .split(',')
    .map((p) => p.split('=') as [string, string]);
  return { t: parts.find(([k]) => k === 't')![1], v1: parts.filter(([k]) => k === 'v1').map(([, v]) => v) };
}
const hmac = (secret: string, t: string, body: string): string =>
  createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');

/**
 * HTTP-target jobs (docs/api.md, "HTTP-target jobs"): the scheduler's dispatchers POST each run to the job's
 * URL, signed with its secret, and complete it with what the target answered; calls reach loopback, private,
 * link-local and metadata addresses only where the operator's allowlist names them (here 127.0.0.1 and ::1,
 * and not 127.0.0.2), checked after DNS and on every redirect.
 */
describe('HTTP-target jobs', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let ops: TeamClients;
  let admin: ApiClient;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let forbidden: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver('127.0.0.1');
    forbidden = await startReceiver('127.0.0.2');
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], ADMIN_TOKEN, systemClock, {
      HTTP_TARGET_ALLOWLIST: '127.0.0.1,::1',
      CANARIES: 'off',
    });
    ops = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
    admin = apiClient(app.url, ADMIN_TOKEN);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await receiver?.close();
    await forbidden?.close();
  });

  /** Defines a target job, and answers its signing secret. */
  const defineTarget = async (job: string, target: Record<string, unknown>, more: Record<string, unknown> = {}) => {
    const answer = await ops.team.put<{ signingSecret?: string; queue: string }>(`/v1/jobs/${job}`, {
      target,
      ...more,
    });
    expect(answer.status).toBe(201);
    return answer.body.signingSecret!;
  };
  const enqueue = async (job: string, payload: unknown = null, headers: Record<string, string> = {}) => {
    const answer = await ops.team.raw<{ runId: string }>('POST', `/v1/jobs/${job}/runs`, { payload }, headers);
    expect(answer.status).toBe(201);
    return answer.body.runId;
  };
  const runOf = async (runId: string): Promise<Run> => (await ops.team.get<Run>(`/v1/runs/${runId}`)).body;
  const eventsOf = async (runId: string): Promise<RunEvent[]> =>
    (await ops.team.get<{ events: RunEvent[] }>(`/v1/runs/${runId}/events`)).body.events;
  const until = async (runId: string, state: string): Promise<Run> => {
    await waitFor(async () => (await runOf(runId)).state === state, { description: `run ${runId} ${state}` });
    return runOf(runId);
  };

  it('defines a job with a target instead of a queue: its runs on the dispatchers’ queue, its secret shown once', async () => {
    const first = await ops.team.put<Record<string, unknown>>('/v1/jobs/ops.hook', {
      target: { url: `${receiver.url}/hook` },
    });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ queue: '_http', target: { url: `${receiver.url}/hook`, timeoutSeconds: 30 } });
    expect(first.body['signingSecret']).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const again = await ops.team.put<Record<string, unknown>>('/v1/jobs/ops.hook', {
      target: { url: `${receiver.url}/hook` },
    });
    expect(again.status).toBe(200);
    expect(again.body).not.toHaveProperty('signingSecret');
    expect((await ops.team.get('/v1/jobs/ops.hook')).body).not.toHaveProperty('signingSecret');
    // The secret is in no event: the log is kept for ever and shown to auditors.
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM events WHERE data::text LIKE '%whsec_%' OR metadata::text LIKE '%whsec_%'`,
    );
    expect(rows[0]!.n).toBe(0);
  });

  it.each([
    [{ queue: 'ops', target: { url: 'https://hooks.example.com/a' } }, 'target'],
    [{ priority: 'critical' }, 'queue'],
    [{ target: { url: 'ftp://hooks.example.com/a' } }, 'target.url'],
    [{ target: { url: 'not a url' } }, 'target.url'],
    [{ target: { url: 'https://user:pw@hooks.example.com/a' } }, 'target.url'],
    [{ target: { url: 'https://hooks.example.com/a', timeoutSeconds: 0 } }, 'target.timeoutSeconds'],
    [{ target: { url: 'https://hooks.example.com/a', timeoutSeconds: 901 } }, 'target.timeoutSeconds'],
  ])('refuses the definition %j, naming %s', async (body, field) => {
    const answer = await ops.team.put<{ type: string; field?: string; errors?: Array<{ field: string }> }>(
      '/v1/jobs/ops.refused',
      body,
    );
    expect(answer.status).toBe(400);
    expect(answer.headers.get('content-type')).toContain('application/problem+json');
    expect(answer.body.type).toBe('/problems/validation-error');
    expect(JSON.stringify(answer.body)).toContain(field);
  });

  it('POSTs each run with its ids, fencing token and payload, signed over timestamp and body, and the run succeeds', async () => {
    const secret = await defineTarget('ops.signed', { url: `${receiver.url}/signed` });
    const runId = await enqueue(
      'ops.signed',
      { invoice: 42 },
      { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    );
    const run = await until(runId, 'succeeded');
    expect(run.attempt).toBe(1);

    const [call, ...more] = receiver.received.filter((r) => r.path === '/signed');
    expect(more).toHaveLength(0);
    const body = JSON.parse(call!.body) as Record<string, unknown>;
    expect(body).toEqual({
      runId,
      job: 'ops.signed',
      attempt: 1,
      idempotencyKey: expect.any(String),
      fencingToken: expect.any(Number),
      dryRun: false,
      payload: { invoice: 42 },
    });
    expect(call!.headers).toMatchObject({
      'content-type': 'application/json',
      'idempotency-key': body['idempotencyKey'],
      'chronicle-run-id': runId,
      'chronicle-attempt': '1',
      'chronicle-fencing-token': String(body['fencingToken']),
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    });
    const { t, v1 } = signaturesOf(call!.headers['chronicle-signature']);
    expect(Math.abs(Number(t) - Date.now() / 1000)).toBeLessThan(60);
    expect(v1).toEqual([hmac(secret, t, call!.body)]);
    // A changed body, or another secret, does not verify.
    expect(hmac(secret, t, call!.body.replace('42', '43'))).not.toBe(v1[0]);

    const events = await eventsOf(runId);
    expect(events.map((e) => e.type)).toEqual(['RunScheduled', 'RunLeased', 'RunSucceeded']);
    expect(events[1]!.metadata.actor).toMatch(/^worker:platform:http-targets@/);
  });

  it('retries 5xx, 408 and 429 by the job’s retry policy, waits as Retry-After says, and dead-letters any other 4xx at once', async () => {
    receiver.answers.set(
      '/flaky',
      (n) =>
        [
          { status: 503, body: 'down for a moment' },
          { status: 429, headers: { 'retry-after': '2' } },
          { status: 408 },
          { status: 204 },
        ][n] ?? { status: 200 },
    );
    await defineTarget(
      'ops.flaky',
      { url: `${receiver.url}/flaky` },
      {
        retry: { maxAttempts: 5, baseSeconds: 0, maxSeconds: 0 },
      },
    );
    const runId = await enqueue('ops.flaky');
    const run = await until(runId, 'succeeded');
    expect(run.attempt).toBe(4);
    const failures = (await eventsOf(runId)).filter((e) => e.type === 'RunFailed').map((e) => e.data);
    expect(failures.map((f) => [f['error'], f['retryable']])).toEqual([
      ['HTTP 503 Service Unavailable: down for a moment', true],
      ['HTTP 429 Too Many Requests', true],
      ['HTTP 408 Request Timeout', true],
    ]);
    // Retry-After: 2 instead of the backoff (which is 0 here).
    const asked = failures[1]!;
    expect(Date.parse(asked['retryAt'] as string) - Date.parse(asked['failedAt'] as string)).toBe(2000);
    expect(Date.parse(failures[0]!['retryAt'] as string)).toBe(Date.parse(failures[0]!['failedAt'] as string));

    receiver.answers.set('/bad', () => ({ status: 422, body: 'invoice is missing' }));
    await defineTarget('ops.bad', { url: `${receiver.url}/bad` });
    const bad = await enqueue('ops.bad');
    const dead = await until(bad, 'dead');
    expect(dead.attempt).toBe(1);
    expect(dead.lastError).toBe('HTTP 422 Unprocessable Entity: invoice is missing');
    expect((await eventsOf(bad)).find((e) => e.type === 'RunDead')!.data['reason']).toBe('not_retryable');
  });

  it('fails a call that answers later than the target’s timeout, as worth retrying', async () => {
    receiver.answers.set('/slow', () => ({ status: 200, delayMs: 3000 }));
    await defineTarget(
      'ops.slow',
      { url: `${receiver.url}/slow`, timeoutSeconds: 1 },
      {
        retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
      },
    );
    const runId = await enqueue('ops.slow');
    const dead = await until(runId, 'dead');
    expect(dead.lastError).toBe('no answer within the timeout');
    expect((await eventsOf(runId)).find((e) => e.type === 'RunDead')!.data['reason']).toBe('attempts_exhausted');
  });

  it('refuses addresses the allowlist does not name, after DNS and on every redirect, without connecting', async () => {
    await defineTarget('ops.elsewhere', { url: `${forbidden.url}/x` });
    await defineTarget('ops.metadata', { url: 'http://169.254.169.254/latest/meta-data/' });
    receiver.answers.set('/out', () => ({ status: 307, headers: { location: `${forbidden.url}/y` } }));
    await defineTarget('ops.redirected-out', { url: `${receiver.url}/out` });
    receiver.answers.set('/in', () => ({ status: 308, headers: { location: '/landing' } }));
    const inSecret = await defineTarget('ops.redirected-in', { url: `${receiver.url}/in` });

    const [elsewhere, metadata, out, inside] = await Promise.all(
      ['ops.elsewhere', 'ops.metadata', 'ops.redirected-out', 'ops.redirected-in'].map((job) => enqueue(job)),
    );
    expect((await until(elsewhere!, 'dead')).lastError).toMatch(
      /^refused: 127\.0\.0\.2 resolves to 127\.0\.0\.2, a loopback address: calls reach it only if HTTP_TARGET_ALLOWLIST names it$/,
    );
    expect((await until(metadata!, 'dead')).lastError).toMatch(/^refused: .*the cloud metadata address/);
    expect((await until(out!, 'dead')).lastError).toMatch(/^refused: 127\.0\.0\.2 .*loopback/);
    for (const runId of [elsewhere!, metadata!, out!])
      expect((await eventsOf(runId)).find((e) => e.type === 'RunDead')!.data['reason']).toBe('not_retryable');
    expect(forbidden.received).toEqual([]);

    // A redirect to an address allowed is followed: the same body, signed the same.
    await until(inside!, 'succeeded');
    const landing = receiver.received.find((r) => r.path === '/landing')!;
    const first = receiver.received.find((r) => r.path === '/in')!;
    expect(landing.body).toBe(first.body);
    const { t, v1 } = signaturesOf(landing.headers['chronicle-signature']);
    expect(v1).toEqual([hmac(inSecret, t, landing.body)]);
  });

  it('calls https with the endpoint’s certificate checked: one the platform does not trust fails the call, retryable', async () => {
    // A certificate of its own for localhost, which no CA the process trusts has signed.
    const dir = mkdtempSync(join(tmpdir(), 'http-targets-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    let handshakes = 0;
    const tls = createTlsServer(
      { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
      (_request, response) => response.writeHead(200).end(),
    );
    tls.on('tlsClientError', () => handshakes++);
    // Both loopbacks (localhost resolves to 127.0.0.1 and ::1, both allowlisted here).
    await new Promise<void>((resolve) => tls.listen(0, '::', resolve));
    try {
      const { port } = tls.address() as { port: number };
      await defineTarget(
        'ops.tls',
        { url: `https://localhost:${port}/tls` },
        {
          retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
        },
      );
      const dead = await until(await enqueue('ops.tls'), 'dead');
      expect(dead.lastError).toMatch(/^the call failed: DEPTH_ZERO_SELF_SIGNED_CERT/);
      expect(handshakes).toBeGreaterThan(0);
    } finally {
      tls.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rotates a job’s secret: both sign while the old one is still valid, then the new one alone; each rotation in the admin trail', async () => {
    const original = await defineTarget('ops.rotated', { url: `${receiver.url}/rotated` });
    const rotated = await ops.team.post<{ secret: string; previousValidUntil: string }>(
      '/v1/jobs/ops.rotated/signing-secret:rotate',
      {},
    );
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(original);
    expect(Math.abs(Date.parse(rotated.body.previousValidUntil) - (Date.now() + 86_400_000))).toBeLessThan(60_000);

    await until(await enqueue('ops.rotated'), 'succeeded');
    const during = receiver.received.filter((r) => r.path === '/rotated').at(-1)!;
    const both = signaturesOf(during.headers['chronicle-signature']);
    expect(both.v1).toEqual([hmac(rotated.body.secret, both.t, during.body), hmac(original, both.t, during.body)]);

    const again = await ops.team.post<{ secret: string }>('/v1/jobs/ops.rotated/signing-secret:rotate', {
      previousValidSeconds: 0,
    });
    expect(again.status).toBe(200);
    await until(await enqueue('ops.rotated'), 'succeeded');
    const after = receiver.received.filter((r) => r.path === '/rotated').at(-1)!;
    const one = signaturesOf(after.headers['chronicle-signature']);
    expect(one.v1).toEqual([hmac(again.body.secret, one.t, after.body)]);

    type Trail = { items: Array<{ type: string; data: Record<string, unknown>; actor: string }> };
    const rotations = () => admin.get<Trail>('/v1/audit?type=SigningSecretRotated');
    await waitFor(async () => (await rotations()).body.items.length === 2, { description: 'both rotations audited' });
    const trail = await rotations();
    expect(trail.body.items.map((e) => e.data['job'])).toEqual(['ops.rotated', 'ops.rotated']);
    expect(trail.body.items.every((e) => e.actor === ops.teamActor)).toBe(true);
    expect(JSON.stringify(trail.body)).not.toContain('whsec_');

    const refused = await ops.team.post<{ type: string }>('/v1/jobs/ops.rotated/signing-secret:rotate', {
      previousValidSeconds: 8 * 86_400,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.type).toBe('/problems/validation-error');
    expect((await ops.team.put('/v1/jobs/ops.queued', { queue: 'ops' })).status).toBe(201);
    const noTarget = await ops.team.post<{ type: string }>('/v1/jobs/ops.queued/signing-secret:rotate', {});
    expect(noTarget.status).toBe(400);
    const unknown = await ops.team.post<{ type: string }>('/v1/jobs/ops.nothing/signing-secret:rotate', {});
    expect(unknown.status).toBe(404);
  });

  it('defines a target job and rotates its secret over GraphQL too', async () => {
    const gql = graphqlClient(app.url, ops.teamToken);
    const defined = await gql<{ defineJob: { queue: string; signingSecret: string | null } }>(
      'mutation ($d: JSON!) { defineJob(name: "ops.gql-hook", definition: $d) { queue signingSecret } }',
      { d: { target: { url: `${receiver.url}/gql` } } },
    );
    expect(defined.errors).toBeUndefined();
    expect(defined.data!.defineJob.queue).toBe('_http');
    expect(defined.data!.defineJob.signingSecret).toMatch(/^whsec_/);
    const rotated = await gql<{ rotateSigningSecret: { secret: string; previousValidUntil: string } }>(
      'mutation { rotateSigningSecret(name: "ops.gql-hook", previousValidSeconds: 60) { secret previousValidUntil } }',
    );
    expect(rotated.errors).toBeUndefined();
    expect(rotated.data!.rotateSigningSecret.secret).toMatch(/^whsec_/);
    const refused = await gql(
      'mutation { defineJob(name: "ops.gql-bad", definition: {target: {url: "ftp://x"}}) { name } }',
    );
    expect(refused.errors?.[0]?.extensions.code).toBe('validation-error');
  });

  it('lets a worker’s failure say when to retry, instead of the backoff', async () => {
    expect((await ops.team.put('/v1/jobs/ops.worked', { queue: 'ops' })).status).toBe(201);
    const runId = await enqueue('ops.worked');
    let lease: { runId: string; fencingToken: number } | undefined;
    await waitFor(
      async () => {
        const { body } = await ops.worker.post<{ leases: Array<{ runId: string; fencingToken: number }> }>(
          '/v1/lease',
          { queues: ['ops'], max: 10, waitSeconds: 1 },
        );
        lease = body.leases.find((l) => l.runId === runId) ?? lease;
        return lease !== undefined;
      },
      { description: 'the run leased' },
    );
    const done = await ops.worker.post(`/v1/runs/${runId}/complete`, {
      fencingToken: lease!.fencingToken,
      outcome: 'failure',
      error: 'downstream rate limited',
      retryAfterSeconds: 7,
    });
    expect(done.status).toBe(200);
    const failed = (await eventsOf(runId)).find((e) => e.type === 'RunFailed')!.data;
    expect(Date.parse(failed['retryAt'] as string) - Date.parse(failed['failedAt'] as string)).toBe(7000);
    const tooLong = await ops.worker.post<{ type: string }>(`/v1/runs/${runId}/complete`, {
      fencingToken: lease!.fencingToken,
      outcome: 'failure',
      retryAfterSeconds: 86_401,
    });
    expect(tooLong.status).toBe(400);
  });
});
