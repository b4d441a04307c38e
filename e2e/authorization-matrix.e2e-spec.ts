import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { ApiModule } from '@chronicle/api';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { apiClient, createTeam, startApp, type ApiClient, type RunningApp, type TeamClients } from './support';
import { operationsOf, type OpenApiDocument } from './support/openapi-document';

/*
 * Every endpoint's authorisation, proven: every REST operation of the OpenAPI document and every
 * GraphQL field of Query and Mutation, called by each kind of caller on team alpha's resources, against
 * the status the table below expects. docs/authorization.md is this table, written by this test: in
 * CI a difference fails; elsewhere the file is rewritten, to be committed with the change.
 */

const ADMIN_TOKEN = 'e2e-admin-token-authorization-0123456789';
const DOCUMENT = path.resolve(__dirname, '../docs/authorization.md');

const CALLERS = [
  'no token',
  'malformed',
  'revoked',
  'expired',
  'admin',
  'team A',
  'team B',
  'worker A',
  'worker B',
  'platform worker',
] as const;
type CallerName = (typeof CALLERS)[number];
type Authenticated = Exclude<CallerName, 'no token' | 'malformed' | 'revoked' | 'expired'>;

/**
 * What a caller gets: the HTTP status, or for a call that answers each run of a batch, the status and
 * that run's (`200/403`); for GraphQL the status of the field's error, or 200.
 */
type Outcome = number | `${number}/${number}`;
type Expected = Readonly<Record<CallerName, Outcome>>;

/** Team alpha's resources, made afresh where a call changes what it acts on. */
interface World {
  /** A name no other call used: `<prefix>-<n>`. */
  unique(prefix: string): string;
  /** A ready run of alpha.job. */
  readyRun(): Promise<string>;
  /** A run of alpha.held, leased by worker A. */
  leasedRun(): Promise<{ runId: string; fencingToken: number }>;
  /** A run of alpha.held that died. */
  deadRun(): Promise<string>;
  /** A fresh team token of alpha's, or a fresh platform worker token: its id. */
  tokenId(owner: 'alpha' | 'platform'): Promise<string>;
  /** alpha.pausable, paused. */
  pausedJob(): Promise<string>;
  /** A bulk operation of alpha's, done (it matched nothing): its id. */
  bulkOperation(): Promise<string>;
}

interface Call {
  /** The path, when it is not the operation's own (parameters filled in). */
  readonly path?: string;
  readonly body?: unknown;
}

interface Row {
  /** `METHOD /path` as the OpenAPI document names it, or `query field`/`mutation field` for GraphQL. */
  readonly operation: string;
  readonly expected: Expected;
  readonly call: (world: World) => Promise<Call> | Call;
}

const REFUSED_UNAUTHENTICATED = { 'no token': 401, malformed: 401, revoked: 401, expired: 401 } as const;
const NOBODY: Record<Authenticated, Outcome> = {
  admin: 403,
  'team A': 403,
  'team B': 403,
  'worker A': 403,
  'worker B': 403,
  'platform worker': 403,
};

/** Authenticated callers refused (403) unless named; the unauthenticated always 401. */
function only(allowed: Partial<Record<Authenticated, Outcome>>): Expected {
  return { ...REFUSED_UNAUTHENTICATED, ...NOBODY, ...allowed };
}
/** Answered to anyone, with or without a token. */
const PUBLIC: Expected = Object.fromEntries(CALLERS.map((caller) => [caller, 200])) as Expected;

/** Team alpha's own (and the admin's); team B is told it does not exist. */
const alphaReads = (status: Outcome = 200): Expected => only({ admin: status, 'team A': status, 'team B': 404 });
/** A run of alpha's: its team, the admin, and the workers of its queue read it; others are told it does not exist. */
const alphaRunReads = only({
  admin: 200,
  'team A': 200,
  'team B': 404,
  'worker A': 200,
  'worker B': 404,
  'platform worker': 404,
});
/** Team alpha's changes: the admin is not a team, and team B is told alpha's resource does not exist. */
const alphaChanges = (status: Outcome = 200): Expected => only({ 'team A': status, 'team B': 404 });
/** A job of alpha's defined: a name in another team's namespace is refused for its name. */
const alphaDefines = (status: Outcome): Expected => only({ 'team A': status });
/** A filter of dead letters: each team's acts on its own (team B's matches none of alpha's). */
const ownDeadLetters = only({ 'team A': 200, 'team B': 200 });
/** Any team (each sees its own), and the admin (all). */
const everyReader = (status: Outcome = 200): Expected => only({ admin: status, 'team A': status, 'team B': status });
/** Worker A's run: another worker's is not its own. */
const workerAOnly = (status: Outcome = 200, other: Outcome = 404): Expected =>
  only({ 'worker A': status, 'worker B': other, 'platform worker': other });

const rest = (operation: string, expected: Expected, call: Row['call'] = () => ({})): Row => ({
  operation,
  expected,
  call,
});

const TEAM_QUEUES = ['alpha', 'alpha-held'];
const SCHEDULE = { cron: '0 3 * * *', timeZone: 'Europe/Berlin' };

const REST_ROWS: readonly Row[] = [
  rest('GET /healthz', PUBLIC),
  rest('POST /v1/teams', only({ admin: 201 }), (w) => ({ body: { id: w.unique('team') } })),
  rest('GET /v1/teams/{team}/tokens', only({ admin: 200, 'team A': 200 }), () => ({ path: '/v1/teams/alpha/tokens' })),
  rest('POST /v1/teams/{team}/tokens', only({ admin: 201 }), () => ({
    path: '/v1/teams/alpha/tokens',
    body: { kind: 'team', queues: TEAM_QUEUES },
  })),
  rest('DELETE /v1/teams/{team}/tokens/{id}', only({ admin: 200, 'team A': 200 }), async (w) => ({
    path: `/v1/teams/alpha/tokens/${await w.tokenId('alpha')}`,
  })),
  rest('GET /v1/tokens', only({ admin: 200 })),
  rest('POST /v1/tokens', only({ admin: 201 }), () => ({ body: { kind: 'worker', queues: ['shared'] } })),
  rest('DELETE /v1/tokens/{id}', only({ admin: 200 }), async (w) => ({
    path: `/v1/tokens/${await w.tokenId('platform')}`,
  })),
  rest('GET /v1/queues/{queue}/grants', only({ admin: 200 }), () => ({ path: '/v1/queues/shared/grants' })),
  rest('POST /v1/queues/{queue}/grants', only({ admin: 201 }), (w) => ({
    path: `/v1/queues/${w.unique('queue')}/grants`,
    body: { team: 'alpha' },
  })),
  rest('GET /v1/queues/{queue}/limits', only({ admin: 200 }), () => ({ path: '/v1/queues/shared/limits' })),
  rest('PUT /v1/queues/{queue}/limits', only({ admin: 200 }), (w) => ({
    path: `/v1/queues/${w.unique('queue')}/limits`,
    body: { concurrency: 100 },
  })),
  rest('GET /v1/admin/shards', only({ admin: 200 }), () => ({ path: '/v1/admin/shards' })),
  rest('GET /v1/teams/{team}/quotas', only({ admin: 200, 'team A': 200 }), () => ({ path: '/v1/teams/alpha/quotas' })),
  rest('PUT /v1/teams/{team}/quotas', only({ admin: 200 }), () => ({
    path: '/v1/teams/alpha/quotas',
    body: { maxPendingRuns: 100_000 },
  })),
  rest('GET /v1/jobs', everyReader()),
  rest('GET /v1/jobs/{name}', alphaReads(), () => ({ path: '/v1/jobs/alpha.job' })),
  rest('PUT /v1/jobs/{name}', alphaDefines(201), (w) => ({
    path: `/v1/jobs/alpha.${w.unique('defined')}`,
    body: { queue: 'alpha' },
  })),
  rest('GET /v1/jobs/{name}/versions', alphaReads(), () => ({ path: '/v1/jobs/alpha.job/versions' })),
  rest('GET /v1/jobs/{name}/preview', alphaReads(), () => ({ path: '/v1/jobs/alpha.cron/preview' })),
  rest('POST /v1/jobs/{name}:pause', alphaChanges(), () => ({ path: '/v1/jobs/alpha.pausable:pause' })),
  rest('POST /v1/jobs/{name}:resume', alphaChanges(), async (w) => ({
    path: `/v1/jobs/${await w.pausedJob()}:resume`,
  })),
  rest('POST /v1/jobs/{name}/signing-secret:rotate', alphaChanges(), () => ({
    path: '/v1/jobs/alpha.hook/signing-secret:rotate',
    body: {},
  })),
  rest('POST /v1/jobs/{name}:backfill', alphaChanges(), () => ({
    path: '/v1/jobs/alpha.cron:backfill',
    body: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T12:00:00Z' },
  })),
  rest('POST /v1/jobs/{name}/runs', alphaChanges(201), () => ({ path: '/v1/jobs/alpha.job/runs', body: {} })),
  rest('POST /v1/runs:batch', alphaChanges(200), () => ({ body: { runs: [{ job: 'alpha.job' }] } })),
  rest('GET /v1/runs', everyReader()),
  rest('GET /v1/runs/{id}', alphaRunReads, async (w) => ({ path: `/v1/runs/${await w.readyRun()}` })),
  rest('GET /v1/runs/{id}/events', alphaRunReads, async (w) => ({ path: `/v1/runs/${await w.readyRun()}/events` })),
  rest('POST /v1/runs/{id}:cancel', alphaChanges(), async (w) => ({ path: `/v1/runs/${await w.readyRun()}:cancel` })),
  rest('GET /v1/audit', everyReader()),
  rest('GET /v1/dlq', everyReader()),
  rest('GET /v1/dlq/{id}', alphaReads(), async (w) => ({ path: `/v1/dlq/${await w.deadRun()}` })),
  rest('POST /v1/dlq/{id}:replay', alphaChanges(), async (w) => ({ path: `/v1/dlq/${await w.deadRun()}:replay` })),
  rest('POST /v1/dlq/{id}:discard', alphaChanges(), async (w) => ({ path: `/v1/dlq/${await w.deadRun()}:discard` })),
  rest('POST /v1/dlq:replay', ownDeadLetters, () => ({ body: { job: 'alpha.held', dryRun: true } })),
  rest('POST /v1/dlq:discard', ownDeadLetters, () => ({ body: { job: 'alpha.held', dryRun: true } })),
  rest('POST /v1/bulk-operations', everyReader(), () => ({
    body: { action: 'cancel-runs', filter: { job: 'alpha.job' }, dryRun: true },
  })),
  rest('GET /v1/bulk-operations', everyReader()),
  rest('GET /v1/bulk-operations/{id}', alphaReads(), async (w) => ({
    path: `/v1/bulk-operations/${await w.bulkOperation()}`,
  })),
  // A done operation: the caller gets past authorisation to the operation's own refusal.
  rest('POST /v1/bulk-operations/{id}:stop', alphaReads(409), async (w) => ({
    path: `/v1/bulk-operations/${await w.bulkOperation()}:stop`,
  })),
  rest('POST /v1/bulk-operations/{id}:resume', alphaReads(409), async (w) => ({
    path: `/v1/bulk-operations/${await w.bulkOperation()}:resume`,
  })),
  rest('POST /v1/schedules:preview', everyReader(), () => ({ body: { schedule: SCHEDULE, count: 2 } })),
  rest('POST /v1/lease', only({ 'worker A': 200 }), () => ({ body: { queues: ['alpha'], max: 1 } })),
  rest('POST /v1/runs/{id}/heartbeat', workerAOnly(), async (w) => {
    const { runId, fencingToken } = await w.leasedRun();
    return { path: `/v1/runs/${runId}/heartbeat`, body: { fencingToken } };
  }),
  rest('POST /v1/runs:heartbeat', workerAOnly(200, '200/404'), async (w) => ({
    body: { heartbeats: [await w.leasedRun()] },
  })),
  rest('POST /v1/runs/{id}/complete', workerAOnly(), async (w) => {
    const { runId, fencingToken } = await w.leasedRun();
    return { path: `/v1/runs/${runId}/complete`, body: { fencingToken, outcome: 'success' } };
  }),
  rest('POST /v1/runs:complete', workerAOnly(200, '200/404'), async (w) => ({
    body: { completions: [{ ...(await w.leasedRun()), outcome: 'success' }] },
  })),
  rest('GET /metrics', PUBLIC),
  rest('GET /docs-json', PUBLIC),
];

const graphql = (
  operation: string,
  expected: Expected,
  document: string,
  variables: (world: World) => Promise<Record<string, unknown>> | Record<string, unknown>,
): Row => ({
  operation,
  expected,
  call: async (world) => ({ path: '/graphql', body: { query: document, variables: await variables(world) } }),
});

const GRAPHQL_ROWS: readonly Row[] = [
  graphql('query job', alphaReads(), 'query { job(name: "alpha.job") { name } }', () => ({})),
  graphql('query jobs', everyReader(), 'query { jobs { edges { node { name } } } }', () => ({})),
  graphql('query run', alphaRunReads, 'query ($id: ID!) { run(id: $id) { id } }', async (w) => ({
    id: await w.readyRun(),
  })),
  graphql('query runs', everyReader(), 'query { runs { edges { node { id } } } }', () => ({})),
  graphql('query deadLetters', everyReader(), 'query { deadLetters { edges { node { id } } } }', () => ({})),
  graphql('query auditEvents', everyReader(), 'query { auditEvents { edges { node { type } } } }', () => ({})),
  graphql(
    'query bulkOperationPreview',
    everyReader(),
    'query { bulkOperationPreview(action: "cancel-runs", filter: { job: "alpha.job" }) { matched } }',
    () => ({}),
  ),
  graphql('query bulkOperations', everyReader(), 'query { bulkOperations { edges { node { id } } } }', () => ({})),
  graphql('query bulkOperation', alphaReads(), 'query ($id: ID!) { bulkOperation(id: $id) { id } }', async (w) => ({
    id: await w.bulkOperation(),
  })),
  graphql(
    'mutation startBulkOperation',
    everyReader(),
    'mutation { startBulkOperation(action: "pause-jobs", filter: { job: "alpha.none" }) { id } }',
    () => ({}),
  ),
  graphql(
    'mutation stopBulkOperation',
    alphaReads(409),
    'mutation ($id: ID!) { stopBulkOperation(id: $id) { id } }',
    async (w) => ({ id: await w.bulkOperation() }),
  ),
  graphql(
    'mutation resumeBulkOperation',
    alphaReads(409),
    'mutation ($id: ID!) { resumeBulkOperation(id: $id) { id } }',
    async (w) => ({ id: await w.bulkOperation() }),
  ),
  graphql('query queues', everyReader(), 'query { queues { queue } }', () => ({})),
  graphql('query queueHistory', everyReader(), 'query { queueHistory(queue: "alpha") { minute } }', () => ({})),
  graphql(
    'query schedulePreview',
    everyReader(),
    'query ($s: ScheduleInput!) { schedulePreview(schedule: $s, count: 2) }',
    () => ({ s: SCHEDULE }),
  ),
  graphql(
    'mutation defineJob',
    alphaDefines(200),
    'mutation ($name: String!) { defineJob(name: $name, definition: { queue: "alpha" }) { name } }',
    (w) => ({ name: `alpha.${w.unique('graphql-defined')}` }),
  ),
  graphql(
    'mutation rotateSigningSecret',
    alphaChanges(),
    'mutation { rotateSigningSecret(name: "alpha.hook") { previousValidUntil } }',
    () => ({}),
  ),
  graphql('mutation pauseJob', alphaChanges(), 'mutation { pauseJob(name: "alpha.pausable") { name } }', () => ({})),
  graphql(
    'mutation resumeJob',
    alphaChanges(),
    'mutation ($name: String!) { resumeJob(name: $name) { name } }',
    async (w) => ({
      name: await w.pausedJob(),
    }),
  ),
  graphql('mutation enqueueRun', alphaChanges(), 'mutation { enqueueRun(job: "alpha.job") { id } }', () => ({})),
  graphql('mutation cancelRun', alphaChanges(), 'mutation ($id: ID!) { cancelRun(id: $id) { id } }', async (w) => ({
    id: await w.readyRun(),
  })),
  graphql(
    'mutation replayDeadLetter',
    alphaChanges(),
    'mutation ($id: ID!) { replayDeadLetter(id: $id) { id } }',
    async (w) => ({ id: await w.deadRun() }),
  ),
  graphql(
    'mutation discardDeadLetter',
    alphaChanges(),
    'mutation ($id: ID!) { discardDeadLetter(id: $id) { id } }',
    async (w) => ({ id: await w.deadRun() }),
  ),
];

describe('the authorisation matrix', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let admin: ApiClient;
  let alpha: TeamClients;
  let tokens: Record<CallerName, string | undefined>;
  let world: World;
  const actual = new Map<string, Record<CallerName, Outcome>>();

  beforeAll(async () => {
    db = await createTestDatabase();
    // Many calls fail authentication on purpose: the failed-auth limit must not answer them instead.
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN, undefined, {
      AUTH_FAILURES_PER_MINUTE: '100000',
    });
    admin = apiClient(app.url, ADMIN_TOKEN);
    alpha = await createTeam(app.url, ADMIN_TOKEN, 'alpha', TEAM_QUEUES);
    const beta = await createTeam(app.url, ADMIN_TOKEN, 'beta', ['beta']);
    expect((await admin.post('/v1/queues/shared/grants', { team: 'alpha' })).status).toBe(201);
    const platform = await admin.post<{ token: string }>('/v1/tokens', { kind: 'worker', queues: ['shared'] });
    const dies = { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 };
    for (const [name, definition] of [
      ['alpha.job', { queue: 'alpha' }],
      ['alpha.held', { queue: 'alpha-held', retry: dies }],
      ['alpha.pausable', { queue: 'alpha' }],
      ['alpha.cron', { queue: 'alpha', schedule: SCHEDULE }],
      ['alpha.hook', { target: { url: 'https://hooks.example.com/alpha' } }],
    ] as const)
      expect((await alpha.team.put(`/v1/jobs/${name}`, definition)).status).toBe(201);

    let n = 0;
    const leasedRun = async (): Promise<{ runId: string; fencingToken: number }> => {
      expect((await alpha.team.post('/v1/jobs/alpha.held/runs', {})).status).toBe(201);
      const lease = await alpha.worker.post<{ leases: Array<{ runId: string; fencingToken: number }> }>('/v1/lease', {
        queues: ['alpha-held'],
        max: 1,
      });
      const [leased] = lease.body.leases;
      if (leased === undefined) throw new Error(`no run of alpha.held to lease: ${lease.status}`);
      return { runId: leased.runId, fencingToken: leased.fencingToken };
    };
    world = {
      unique: (prefix) => `${prefix}-${++n}`,
      readyRun: async () => (await alpha.team.post<{ runId: string }>('/v1/jobs/alpha.job/runs', {})).body.runId,
      leasedRun,
      deadRun: async () => {
        const { runId, fencingToken } = await leasedRun();
        const died = await alpha.worker.post(`/v1/runs/${runId}/complete`, {
          fencingToken,
          outcome: 'failure',
          error: 'authorisation matrix',
          retryable: false,
        });
        expect(died.status).toBe(200);
        return runId;
      },
      tokenId: async (owner) => {
        const issued = await admin.post<{ id: string }>(owner === 'alpha' ? '/v1/teams/alpha/tokens' : '/v1/tokens', {
          kind: owner === 'alpha' ? 'team' : 'worker',
          queues: owner === 'alpha' ? TEAM_QUEUES : ['shared'],
        });
        return issued.body.id;
      },
      pausedJob: async () => {
        expect((await alpha.team.post('/v1/jobs/alpha.pausable:pause')).status).toBe(200);
        return 'alpha.pausable';
      },
      bulkOperation: async () => {
        const started = await alpha.team.post<{ id: string }>('/v1/bulk-operations', {
          action: 'pause-jobs',
          filter: { job: 'alpha.none' },
        });
        expect(started.status).toBe(202);
        const { id } = started.body;
        await waitFor(
          async () => (await alpha.team.get<{ status: string }>(`/v1/bulk-operations/${id}`)).body.status === 'done',
          10_000,
        );
        return id;
      },
    };

    // A token that worked, then was revoked; one that worked, then expired.
    const revoked = await admin.post<{ token: string; id: string }>('/v1/teams/alpha/tokens', {
      kind: 'team',
      queues: TEAM_QUEUES,
    });
    const expired = await admin.post<{ token: string }>('/v1/teams/alpha/tokens', {
      kind: 'team',
      queues: TEAM_QUEUES,
      expiresAt: new Date(Date.now() + 2_000).toISOString(),
    });
    for (const token of [revoked.body.token, expired.body.token])
      expect((await apiClient(app.url, token).get('/v1/jobs')).status).toBe(200);
    expect((await admin.raw('DELETE', `/v1/teams/alpha/tokens/${revoked.body.id}`)).status).toBe(200);
    for (const token of [revoked.body.token, expired.body.token])
      await waitFor(async () => (await apiClient(app.url, token).get('/v1/jobs')).status === 401, 10_000);

    tokens = {
      'no token': undefined,
      malformed: 'not-a-token; %ff==',
      revoked: revoked.body.token,
      expired: expired.body.token,
      admin: ADMIN_TOKEN,
      'team A': alpha.teamToken,
      'team B': beta.teamToken,
      'worker A': alpha.workerToken,
      'worker B': beta.workerToken,
      'platform worker': platform.body.token,
    };
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  /** What a caller gets from one row's call, made afresh for it. */
  async function outcomeOf(row: Row, caller: CallerName): Promise<Outcome> {
    const call = await row.call(world);
    const [method, ownPath] =
      row.operation.startsWith('query') || row.operation.startsWith('mutation')
        ? ['POST', '/graphql']
        : row.operation.split(' ');
    const token = tokens[caller];
    const response = await fetch(`${app.url}${call.path ?? ownPath}`, {
      method,
      headers: {
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
    });
    const text = await response.text();
    if (response.status !== 200 || !(response.headers.get('content-type') ?? '').includes('json'))
      return response.status;
    const body = JSON.parse(text) as {
      errors?: Array<{ extensions: { status: number } }>;
      [batch: string]: unknown;
    };
    if (ownPath === '/graphql') return body.errors?.[0]?.extensions.status ?? 200;
    const perRun = body['results'] as Array<{ problem?: { status: number } }> | undefined;
    const problem = perRun?.find((item) => item.problem !== undefined)?.problem;
    return problem === undefined ? 200 : `200/${problem.status}`;
  }

  it.each([...REST_ROWS, ...GRAPHQL_ROWS].map((row) => [row.operation, row] as const))('%s', async (_, row) => {
    const outcomes = {} as Record<CallerName, Outcome>;
    for (const caller of CALLERS) outcomes[caller] = await outcomeOf(row, caller);
    actual.set(row.operation, outcomes);
    expect(outcomes).toEqual(row.expected);
  });

  it('covers every REST operation of the OpenAPI document and every GraphQL field', async () => {
    const document = (await (await fetch(`${app.url}/docs-json`)).json()) as OpenApiDocument;
    const documented = operationsOf(document).map(({ method, path: p }) => `${method.toUpperCase()} ${p}`);
    const fields = await apiClient(app.url, ADMIN_TOKEN).post<{
      data: { __schema: Record<'query' | 'mutation', { fields: Array<{ name: string }> }> };
    }>('/graphql', {
      query: '{ __schema { query: queryType { fields { name } } mutation: mutationType { fields { name } } } }',
    });
    const graphqlFields = (['query', 'mutation'] as const).flatMap((kind) =>
      fields.body.data.__schema[kind].fields.map((f) => `${kind} ${f.name}`),
    );
    const rows = new Set([...REST_ROWS, ...GRAPHQL_ROWS].map((row) => row.operation));
    expect([...documented, ...graphqlFields].filter((operation) => !rows.has(operation))).toEqual([]);
  });

  it('is docs/authorization.md, written from this table', async () => {
    const generated = authorizationDocument();
    const committed = await readFile(DOCUMENT, 'utf8').catch(() => '');
    if (committed !== generated && process.env['CI'] !== 'true') await writeFile(DOCUMENT, generated);
    else expect(committed).toBe(generated); // in CI: regenerate with `npx jest e2e/authorization-matrix` and commit
  });
});

/** The table as Markdown: one row per operation, one column per caller. */
function authorizationDocument(): string {
  const table = (rows: readonly Row[]): string[] => [
    `| operation | ${CALLERS.join(' | ')} |`,
    `|---|${CALLERS.map(() => '---').join('|')}|`,
    ...rows.map(
      (row) => `| \`${row.operation}\` | ${CALLERS.map((caller) => String(row.expected[caller])).join(' | ')} |`,
    ),
  ];
  return [
    '# Authorisation',
    '',
    '<!-- Written by e2e/authorization-matrix.e2e-spec.ts from its table; do not edit by hand. -->',
    '',
    "Who may call what. Each cell is the status each kind of caller gets, calling on team A's",
    "resources (its jobs, runs, dead letters, tokens and quotas; the lease asks for team A's queue):",
    'the test that writes this file makes every call and checks every cell.',
    '',
    '- **no token**, **malformed** (not a token we issued), **revoked**, **expired**: 401 everywhere but the public endpoints.',
    "- **admin**: the operator's token (`SCHEDULER_ADMIN_TOKEN`): teams, tokens, grants, queue caps and quotas, and reading everything; it is not a team, so it defines and enqueues nothing.",
    "- **team A**, **team B**: team tokens. Another team's job, run or dead letter is a 404, so that names do not leak; defining a job in another team's namespace (`alpha.*`) is a 403, told by the name alone. A dead-letter filter (`/v1/dlq:replay`, `:discard`) acts on the caller's own team only: team B's matches none of team A's.",
    '- **worker A**, **worker B**: worker tokens of teams A and B; **platform worker**: a worker token for a shared queue granted to team A. A worker reads the runs of its own queues, and heartbeats and completes the runs it leased.',
    "- `200/404`: a batch call answers 200 and each run in it; the run's own answer is 404 when it is not the caller's.",
    "- For GraphQL the status is the field error's `extensions.status` (the request itself answers 200, or 401 without a valid token).",
    '',
    '## REST',
    '',
    ...table(REST_ROWS),
    '',
    '## GraphQL (`POST /graphql`)',
    '',
    ...table(GRAPHQL_ROWS),
    '',
  ].join('\n');
}
