import SwaggerParser from '@apidevtools/swagger-parser';
import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { apiClient } from './support/api-client';
import {
  documentValidator,
  operationsOf,
  type MediaType,
  type OpenApiDocument,
  type Operation,
} from './support/openapi-document';
import { startApp, type RunningApp } from './support/start-app';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

/** The nightly export, the OpenAPI document's example job definition (PUT /v1/jobs/{name}), as it must read. */
const NIGHTLY_EXPORT_JOB = {
  name: 'billing.export-invoices',
  schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin', jitterSeconds: 0, missedRunPolicy: 'run_once' },
  queue: 'billing',
  priority: 'critical',
  timeoutSeconds: 900,
  retry: { maxAttempts: 5, baseSeconds: 30, maxSeconds: 1800 },
  concurrency: 1,
  payload: { format: 'csv' },
};
const EXAMPLE_LEASES = {
  leases: [
    {
      runId: 'run_8K2',
      job: 'billing.export-invoices',
      attempt: 2,
      idempotencyKey: 'billing.export-invoices@2026-03-15T02:00:00+01:00',
      fencingToken: 41877,
      leaseExpiresAt: '2026-03-15T01:02:30Z',
      payload: { format: 'csv' },
    },
  ],
};

/** The operations clients call by these names: renaming one breaks every generated client. */
const OPERATION_IDS = {
  'get /healthz': 'getHealth',
  'post /v1/teams': 'createTeam',
  'post /v1/teams/{team}/tokens': 'issueToken',
  'post /v1/tokens': 'issuePlatformToken',
  'post /v1/queues/{queue}/grants': 'grantQueue',
  'get /v1/queues/{queue}/grants': 'listQueueGrants',
  'get /v1/teams/{team}/quotas': 'getTeamQuotas',
  'put /v1/teams/{team}/quotas': 'setTeamQuotas',
  'get /v1/admin/shards': 'listShards',
  'put /v1/jobs/{name}': 'defineJob',
  'get /v1/jobs/{name}': 'getJob',
  'get /v1/jobs/{name}/preview': 'previewJob',
  'post /v1/jobs/{name}:pause': 'pauseJob',
  'post /v1/jobs/{name}:resume': 'resumeJob',
  'post /v1/jobs/{name}:backfill': 'backfillJob',
  'post /v1/jobs/{name}/runs': 'enqueueRun',
  'post /v1/runs:batch': 'enqueueRuns',
  'get /v1/runs/{id}': 'getRun',
  'get /v1/runs/{id}/events': 'getRunEvents',
  'post /v1/runs/{id}:cancel': 'cancelRun',
  'post /v1/lease': 'leaseRuns',
  'post /v1/runs/{id}/heartbeat': 'heartbeatRun',
  'post /v1/runs:heartbeat': 'heartbeatRuns',
  'post /v1/runs/{id}/complete': 'completeRun',
  'post /v1/runs:complete': 'completeRuns',
  'get /v1/dlq': 'listDeadLetters',
  'get /v1/dlq/{id}': 'getDeadLetter',
  'post /v1/dlq/{id}:replay': 'replayDeadLetter',
  'post /v1/dlq/{id}:discard': 'discardDeadLetter',
  'post /v1/schedules:preview': 'previewSchedule',
};

describe('the OpenAPI document at /docs-json', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let document: OpenApiDocument;

  beforeAll(async () => {
    db = await createTestDatabase();
    // Every path asked without a token, from one address: more failures than the default allows a minute.
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN, undefined, {
      AUTH_FAILURES_PER_MINUTE: '1000',
    });
    document = (await (await fetch(`${app.url}/docs-json`)).json()) as OpenApiDocument;
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const v1 = () => operationsOf(document).filter(({ path }) => path.startsWith('/v1/'));
  const problemTypes = (media: MediaType | undefined): string[] => {
    const parts = (media?.schema as { allOf?: Array<{ $ref?: string; properties?: { type?: { enum?: string[] } } }> })
      ?.allOf;
    expect(parts?.[0]).toEqual({ $ref: '#/components/schemas/Problem' });
    return parts?.[1]?.properties?.type?.enum ?? [];
  };

  it('is valid OpenAPI 3.0 by a standard validator (swagger-parser)', async () => {
    expect(document.openapi).toMatch(/^3\.0\./);
    // validate() dereferences in place: give it a copy.
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined();
  });

  it('names every operation by a stable operationId, each custom method a path and operation of its own', () => {
    const ids = Object.fromEntries(
      operationsOf(document).map((o) => [`${o.method} ${o.path}`, o.operation.operationId]),
    );
    expect(ids).toMatchObject(OPERATION_IDS);
    for (const id of Object.values(ids)) expect(id).toMatch(/^[a-z][A-Za-z]+$/);
    expect(new Set(Object.values(ids)).size).toBe(Object.keys(ids).length);
    const parameters = operationsOf(document).flatMap((o) => (o.operation.parameters ?? []).map((p) => p.name));
    expect(parameters.filter((name) => /action/i.test(name))).toEqual([]);
  });

  it('asks every /v1 operation for the bearer token, and /healthz for none', () => {
    expect(document.components.securitySchemes).toEqual({
      bearer: { type: 'http', scheme: 'bearer', description: expect.any(String) },
    });
    expect(document.security).toBeUndefined();
    for (const { operation } of v1()) expect(operation.security).toEqual([{ bearer: [] }]);
    expect(document.paths['/healthz']?.['get']?.security).toBeUndefined();
  });

  it('documents every success answer as JSON of a named schema', () => {
    for (const { method, path, operation } of operationsOf(document)) {
      const successes = Object.entries(operation.responses).filter(([status]) => status.startsWith('2'));
      expect([method, path, successes.length > 0]).toEqual([method, path, true]);
      for (const [, response] of successes) {
        const ref = (response.content?.['application/json']?.schema as { $ref?: string } | undefined)?.$ref ?? '';
        expect([method, path, ref]).toEqual([method, path, expect.stringMatching(/^#\/components\/schemas\/\w+$/)]);
        expect(document.components.schemas[ref.slice('#/components/schemas/'.length)]).toBeDefined();
      }
    }
  });

  it('documents every refusal as application/problem+json with the problem types it may carry', () => {
    for (const { method, path, operation } of operationsOf(document)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!/^[45]/.test(status) || path === '/healthz') continue;
        expect([method, path, status, Object.keys(response.content ?? {})]).toEqual([
          method,
          path,
          status,
          ['application/problem+json'],
        ]);
        const types = problemTypes(response.content?.['application/problem+json']);
        expect(types.length).toBeGreaterThan(0);
        for (const type of types) expect(response.description).toContain(`\`${type}\``);
        if (status === '429' || status === '503') expect(response.headers).toHaveProperty('Retry-After');
      }
    }
    const typesOf = (operation: Operation, status: string) =>
      problemTypes(operation.responses[status]?.content?.['application/problem+json']);
    // Any token that may see a run reads it; every other call is for one kind of caller.
    const open = v1().filter(({ operation }) => operation.responses['403'] === undefined);
    expect(open.map(({ operation }) => operation.operationId)).toEqual(['getRun', 'getRunEvents']);
    for (const { operation } of v1()) {
      expect(typesOf(operation, '401')).toEqual(['/problems/unauthorized']);
      if (!open.some((o) => o.operation === operation))
        expect(typesOf(operation, '403')).toEqual(['/problems/forbidden']);
      expect(typesOf(operation, '500')).toEqual(['/problems/internal-error']);
      expect(typesOf(operation, '503')).toEqual(['/problems/unavailable']);
      if (operation.requestBody === undefined) continue;
      expect(typesOf(operation, '400')).toContain('/problems/validation-error');
      expect(typesOf(operation, '413')).toContain('/problems/payload-too-large');
    }
    const heartbeat = document.paths['/v1/runs/{id}/heartbeat']!['post']!;
    expect(typesOf(heartbeat, '409')).toEqual(['/problems/stale-lease', '/problems/conflict']);
    const enqueue = document.paths['/v1/jobs/{name}/runs']!['post']!;
    expect(typesOf(enqueue, '429')).toEqual(['/problems/quota-exceeded']);
    expect(typesOf(enqueue, '409')).toEqual([
      '/problems/concurrency-limit',
      '/problems/duplicate-run',
      '/problems/conflict',
    ]);
  });

  it('carries the nightly export and lease examples, and every example fits its schema', () => {
    const put = document.paths['/v1/jobs/{name}']!['put']!;
    const { name, ...definition } = NIGHTLY_EXPORT_JOB;
    expect(put.parameters?.find((p) => p.name === 'name')?.schema).toMatchObject({ example: name });
    expect(put.requestBody?.content['application/json']?.examples?.['nightly-export']?.value).toEqual(definition);
    const lease = document.paths['/v1/lease']!['post']!;
    expect(lease.responses['200']?.content?.['application/json']?.example).toEqual(EXAMPLE_LEASES);

    const validator = documentValidator(document);
    const examples = operationsOf(document).flatMap(({ method, path, operation }) =>
      [
        ...Object.values(operation.requestBody?.content ?? {}),
        ...Object.values(operation.responses).flatMap((response) => Object.values(response.content ?? {})),
      ].flatMap((media) =>
        [
          ...(media.example === undefined ? [] : [media.example]),
          ...Object.values(media.examples ?? {}).map((e) => e.value),
        ].map((value) => ({ where: `${method} ${path}`, schema: media.schema, value })),
      ),
    );
    expect(examples.length).toBeGreaterThanOrEqual(4);
    for (const { where, schema, value } of examples)
      expect([where, validator.check(schema, value)]).toEqual([where, []]);
  });

  it('is answered by the server at every path it lists: each asks for a token, none is an unknown route', async () => {
    const anonymous = apiClient(app.url);
    const unknown = await anonymous.raw('POST', '/v1/jobs/billing.export-invoices:explode');
    expect(unknown.status).toBe(404); // what a path the server does not route answers
    for (const { method, path, operation } of operationsOf(document)) {
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
        const parameter = operation.parameters?.find((p) => p.name === name && p.in === 'path');
        const example = (parameter?.schema as { example?: string } | undefined)?.example ?? 'x';
        return encodeURIComponent(example);
      });
      const answer = await anonymous.raw(method.toUpperCase(), url, operation.requestBody ? {} : undefined);
      if (path === '/healthz') {
        expect(answer.status).toBe(200);
        continue;
      }
      expect([method, url, answer.status, answer.contentType, answer.body['type']]).toEqual([
        method,
        url,
        401,
        expect.stringMatching(/^application\/problem\+json/),
        '/problems/unauthorized',
      ]);
    }
  });

  it('shows as defaults what the server fills in', async () => {
    const admin = apiClient(app.url, ADMIN_TOKEN);
    await admin.post('/v1/teams', { id: 'billing' });
    const { body: token } = await admin.post<{ token: string }>('/v1/teams/billing/tokens', {
      kind: 'team',
      queues: ['billing'],
    });
    const team = apiClient(app.url, token.token);
    const created = await team.put<Record<string, unknown> & { schedule: Record<string, unknown> }>(
      '/v1/jobs/billing.defaults',
      { queue: 'billing', schedule: { cron: '0 2 * * *' } },
    );
    expect(created.status).toBe(201);
    const validator = documentValidator(document);
    expect(validator.checkResponse('PUT', '/v1/jobs/{name}', 201, created.contentType, created.body)).toEqual([]);
    const defaults = (schema: string) =>
      Object.fromEntries(
        Object.entries(
          (document.components.schemas[schema] as { properties: Record<string, { default?: unknown }> }).properties,
        )
          .filter(([, property]) => property.default !== undefined)
          .map(([field, property]) => [field, property.default]),
      );
    expect(Object.keys(defaults('JobBody'))).toEqual(['priority', 'timeoutSeconds', 'retry', 'dryRun']);
    expect(created.body).toMatchObject(defaults('JobBody'));
    expect(Object.keys(defaults('ScheduleBody'))).toHaveLength(5);
    expect(created.body.schedule).toEqual({ cron: '0 2 * * *', ...defaults('ScheduleBody') });
  });
});
