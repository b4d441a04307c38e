import { Writable } from 'node:stream';
import { ApiModule } from '@chronicle/api';
import { createLogger, systemClock } from '@chronicle/platform';
import { SchedulerModule } from '@chronicle/scheduler';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { apiClient, createTeam, startApp, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-logs-0123456789abcdef';
/** In every payload sent: it must never reach a log line. */
const MARKER = 'card-4111-1111-SECRET-MARKER';

type Line = Record<string, unknown>;

/**
 * The logs of the real app, over HTTP: one JSON line per event, the
 * request's id on every line of that request (down to the command
 * handlers'), an access line per request, lines about runs with their
 * fields, and never a token or a payload, not even for a refused request.
 */
describe('logs', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let billing: TeamClients;
  const raw: string[] = [];
  const lines = (): Line[] => raw.map((line) => JSON.parse(line) as Line);
  const linesOf = (requestId: string): Line[] => lines().filter((line) => line['requestId'] === requestId);
  /** The access line is written when the response is done, which may be just after the client has it. */
  const accessLineOf = async (requestId: string): Promise<Line> => {
    await waitFor(() => linesOf(requestId).some((line) => line['msg'] === 'request'), {
      timeoutMs: 5000,
      description: `the access line of ${requestId}`,
    });
    return linesOf(requestId).find((line) => line['msg'] === 'request')!;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        raw.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const logger = createLogger({ level: 'debug', name: 'e2e', destination });
    const modules = [ApiModule, SchedulerModule];
    app = await startApp(db.pool, db.eventStore, modules, ADMIN_TOKEN, systemClock, {}, logger);
    billing = await createTeam(app.url, ADMIN_TOKEN, 'billing', ['billing']);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it("writes Nest's own lines through pino: JSON, level names, ISO times", () => {
    const started = lines().find((line) => line['msg'] === 'Nest application successfully started');
    expect(started).toMatchObject({ level: 'info', name: 'e2e', context: 'NestApplication' });
    expect(new Date(started!['time'] as string).toISOString()).toBe(started!['time']);
  });

  it('carries the request id down to the lines about runs, and never a token or a payload', async () => {
    const job = {
      queue: 'billing',
      retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
      payload: { card: MARKER },
    };
    const defined = await billing.team.raw('PUT', '/v1/jobs/billing.charge', job, { 'x-request-id': 'e2e-define' });
    expect(defined.status).toBe(201);
    expect(defined.headers.get('x-request-id')).toBe('e2e-define');
    const enqueued = await billing.team.post<{ runId: string }>(
      '/v1/jobs/billing.charge/runs',
      { payload: { card: MARKER } },
      { 'x-request-id': 'e2e-enqueue' },
    );
    expect(enqueued.status).toBe(201);
    const { runId } = enqueued.body;

    const leased = await billing.worker.post<{ leases: Array<{ fencingToken: number; payload: unknown }> }>(
      '/v1/lease',
      { queues: ['billing'], max: 1, workerId: 'w1' },
      { 'x-request-id': 'e2e-lease' },
    );
    const [lease] = leased.body.leases;
    expect(lease!.payload).toEqual({ card: MARKER });
    const done = await billing.worker.post(
      `/v1/runs/${runId}/complete`,
      { fencingToken: lease!.fencingToken, outcome: 'success' },
      { 'x-request-id': 'e2e-complete' },
    );
    expect(done.body).toMatchObject({ state: 'succeeded' });

    expect(await accessLineOf('e2e-lease')).toMatchObject({
      level: 'info',
      method: 'POST',
      route: '/v1/lease',
      status: 200,
      durationMs: expect.any(Number),
    });
    const run = { runId, job: 'billing.charge', attempt: 1, fencingToken: lease!.fencingToken };
    // Logged in the command handler, deep under the request: the id came through AsyncLocalStorage.
    expect(linesOf('e2e-lease')).toContainEqual(
      expect.objectContaining({ msg: 'run leased', level: 'debug', workerId: 'w1', ...run }),
    );
    expect(linesOf('e2e-complete')).toContainEqual(
      expect.objectContaining({ msg: 'run succeeded', state: 'succeeded', ...run }),
    );
    expect(await accessLineOf('e2e-complete')).toMatchObject({ route: '/v1/runs/:id/complete', status: 200 });
    expect(await accessLineOf('e2e-define')).toMatchObject({ method: 'PUT', status: 201 });

    const everything = raw.join('\n');
    for (const secret of [MARKER, billing.teamToken, billing.workerToken, ADMIN_TOKEN])
      expect(everything).not.toContain(secret);
  });

  it('logs a refused request (a bad token, a bad body) with its id and status, and neither its token nor its body', async () => {
    const badToken = 'sched_team_not-a-real-token-SECRETISH-42';
    const refused = await apiClient(app.url, badToken).raw(
      'GET',
      '/v1/runs?job=billing.charge&cursor=SECRET-CURSOR',
      undefined,
      {
        'x-request-id': 'e2e-bad-token',
      },
    );
    expect(refused.status).toBe(401);
    expect(refused.headers.get('x-request-id')).toBe('e2e-bad-token');
    // The route's template: no query string (cursors, filters) in the access line.
    expect(await accessLineOf('e2e-bad-token')).toMatchObject({ method: 'GET', route: '/v1/runs', status: 401 });

    const invalid = await billing.team.raw(
      'PUT',
      '/v1/jobs/billing.broken',
      { queue: 'billing', timeoutSeconds: 'soon', payload: { card: MARKER } },
      { 'x-request-id': 'e2e-bad-body' },
    );
    expect(invalid.status).toBe(400);
    expect(await accessLineOf('e2e-bad-body')).toMatchObject({ status: 400 });

    const everything = raw.join('\n');
    for (const secret of [badToken, 'SECRET-CURSOR', MARKER, billing.teamToken])
      expect(everything).not.toContain(secret);
  });

  it('makes up a request id when there is none, or when the one given is not a short plain string', async () => {
    for (const given of [undefined, 'has spaces and "quotes"', 'x'.repeat(65)]) {
      const response = await billing.team.raw(
        'GET',
        '/v1/jobs',
        undefined,
        given === undefined ? {} : { 'x-request-id': given },
      );
      expect(response.status).toBe(200);
      const id = response.headers.get('x-request-id');
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await accessLineOf(id!)).toMatchObject({ method: 'GET', route: '/v1/jobs', status: 200 });
    }
  });

  it("logs an expired lease and the dead letter it makes with the run's fields, outside any request", async () => {
    const job = { queue: 'billing', retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 } };
    expect((await billing.team.put('/v1/jobs/billing.expire', job)).status).toBe(201);
    const { body } = await billing.team.post<{ runId: string }>('/v1/jobs/billing.expire/runs', {
      payload: { card: MARKER },
    });
    const leased = await billing.worker.post<{ leases: Array<{ fencingToken: number }> }>('/v1/lease', {
      queues: ['billing'],
      max: 1,
      leaseSeconds: 1,
      workerId: 'gone',
    });
    const fencingToken = leased.body.leases[0]!.fencingToken;
    const about = (msg: string): Line | undefined => lines().find((l) => l['msg'] === msg && l['runId'] === body.runId);
    await waitFor(() => about('run dead-lettered') !== undefined, {
      timeoutMs: 10_000,
      description: 'the dead letter',
    });
    const run = { runId: body.runId, job: 'billing.expire', attempt: 1, fencingToken, actor: 'scheduler:lease-reaper' };
    expect(about('lease expired')).toMatchObject({ level: 'info', context: 'runs', ...run });
    expect(about('run dead-lettered')).toMatchObject({ level: 'info', reason: 'lease_expired', state: 'dead', ...run });
    expect(about('run dead-lettered')).not.toHaveProperty('requestId');
    expect(raw.join('\n')).not.toContain(MARKER);
  });
});
