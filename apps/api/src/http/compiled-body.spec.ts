import type { ArgumentsHost } from '@nestjs/common';
import type { JsonLogger } from '@chronicle/platform';
import { JobBody } from '../jobs/job-dto';
import { BatchEnqueueBody, EnqueueBody } from '../runs/run-dto';
import { CompleteManyBody, LeaseBody } from '../workers/worker-dto';
import { WorkersController } from '../workers/workers.controller';
import { dateTime, integer, numberAbove, object, queryString, text } from './body-schema';
import { compileBody, compiledBodySchemas, compileQuery } from './compiled-body';
import { ProblemDetailsFilter } from './problem-details.filter';

const checkLease = compileBody(LeaseBody);
const checkCompletions = compileBody(CompleteManyBody);
const checkBatch = compileBody(BatchEnqueueBody);
const checkEnqueue = compileBody(EnqueueBody);

const completion = (fields: Record<string, unknown> = {}) => ({
  runId: 'run_a1',
  fencingToken: 1,
  outcome: 'success',
  ...fields,
});

/** What the check refuses, as the client reads it: the 400 problem's detail. */
function answer(check: (body: unknown) => unknown, body: unknown): { status: number; type: string; detail: string } {
  try {
    check(body);
  } catch (error) {
    const sent: { status?: number; contentType?: string; body?: string } = {};
    const response = {
      status: (status: number) => ((sent.status = status), response),
      type: (contentType: string) => ((sent.contentType = contentType), response),
      send: (text: string) => ((sent.body = text), response),
      setHeader: () => response,
    };
    const host = {
      getType: () => 'http',
      switchToHttp: () => ({ getRequest: () => ({ originalUrl: '/v1/x' }), getResponse: () => response }),
    } as unknown as ArgumentsHost;
    new ProblemDetailsFilter({ error: () => undefined } as unknown as JsonLogger).catch(error, host);
    expect(sent.contentType).toBe('application/problem+json');
    const problem = JSON.parse(sent.body!) as { type: string; detail: string };
    return { status: sent.status!, type: problem.type, detail: problem.detail };
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

const refusal = (check: (body: unknown) => unknown, body: unknown): string => {
  const { status, type, detail } = answer(check, body);
  expect([status, type]).toEqual([400, '/problems/validation-error']);
  return detail;
};

describe('CompiledBody', () => {
  it('lets a valid body through as it came: nothing coerced, defaulted or removed', () => {
    const body = {
      completions: [completion(), completion({ runId: 'run_b2', outcome: 'failure', error: 'boom', retryable: false })],
      lease: { queues: ['billing', 'billing.eu-1_x'], max: 100, leaseSeconds: 3600, workerId: 'w-1' },
    };
    const copy = structuredClone(body);
    expect(checkCompletions(body)).toBe(body);
    expect(body).toEqual(copy);
    const run = { job: 'billing.export', payload: { nested: [1, { deep: null }] }, runAt: '2030-01-01T00:00:00Z' };
    expect(checkBatch({ runs: [run, { job: 'x', idempotencyKey: '!~', delaySeconds: 31_536_000 }] })).toEqual({
      runs: [run, { job: 'x', idempotencyKey: '!~', delaySeconds: 31_536_000 }],
    });
  });

  it('reads a missing body as {}, and takes null for an optional field as not given', () => {
    expect(checkEnqueue(undefined)).toEqual({});
    expect(checkLease({ queues: ['q'], max: 1, leaseSeconds: null, workerId: null, waitSeconds: null })).toBeTruthy();
    expect(checkEnqueue({ payload: null, runAt: null, delaySeconds: null, ifRunning: null })).toBeTruthy();
    expect(checkCompletions({ completions: [completion({ error: null, retryable: null })], lease: null })).toBeTruthy();
  });

  it.each([
    [
      'a wrong type',
      { completions: [completion({ fencingToken: '1' })] },
      'completions.0.fencingToken must be an integer number',
    ],
    [
      'a fraction',
      { completions: [completion({ fencingToken: 1.5 })] },
      'completions.0.fencingToken must be an integer number',
    ],
    [
      'a number below the minimum',
      { completions: [completion(), completion(), completion(), completion({ fencingToken: -1 })] },
      'completions.3.fencingToken must not be less than 0',
    ],
    [
      'a value outside the enum',
      { completions: [completion({ outcome: 'maybe' })] },
      'completions.0.outcome must be one of the following values: success, failure',
    ],
    [
      'a string over its length',
      { completions: [completion({ error: 'x'.repeat(10_001) })] },
      'completions.0.error must be shorter than or equal to 10000 characters',
    ],
    [
      'a pattern not matched',
      { completions: [completion({ runId: 'job_1' })] },
      'completions.0.runId must be a run id',
    ],
    [
      'a missing field',
      { completions: [{ fencingToken: 1, outcome: 'success' }] },
      'completions.0.runId must be a run id',
    ],
    ['an empty array', { completions: [] }, 'completions should not be empty'],
    [
      'an array over its size',
      { completions: Array.from({ length: 101 }, () => completion()) },
      'completions must contain no more than 100 elements',
    ],
    ['an item that is not an object', { completions: [[]] }, 'completions.0 must be an object'],
    ['a nested object of the wrong type', { completions: [completion()], lease: [] }, 'lease must be an object'],
    [
      'a number over the maximum, nested',
      { completions: [completion()], lease: { queues: ['q'], max: 101 } },
      'lease.max must not be greater than 100',
    ],
    ['an unknown field', { completions: [completion()], colour: 'red' }, 'property colour should not exist'],
    [
      'an unknown field in an item',
      { completions: [completion({ colour: 'red' })] },
      'completions.0.property colour should not exist',
    ],
    [
      'a key of the prototype',
      { completions: [completion()], constructor: {} },
      'property constructor should not exist',
    ],
    ['a body that is not an object', [completion()], 'the body must be an object'],
  ])('refuses %s with a 400 naming the path', (_, body, detail) => {
    expect(refusal(checkCompletions, body)).toBe(detail);
  });

  it("uses the domain's patterns and rules for names, keys and times", () => {
    expect(refusal(checkLease, { queues: ['billing', 'a/b'], max: 1 })).toBe('queues.1 must be a queue name');
    expect(refusal(checkBatch, { runs: [{ job: 'a:b' }] })).toBe('runs.0.job must be a job name');
    expect(refusal(checkBatch, { runs: [{ job: 'a', idempotencyKey: 'a b' }] })).toBe(
      'runs.0.idempotencyKey must be 1-200 visible ASCII characters',
    );
    expect(refusal(checkEnqueue, { runAt: '2030-02-30T00:00:00Z' })).toBe('runAt must be a valid ISO 8601 date string');
    expect(refusal(checkEnqueue, { runAt: '2030-01-01 00:00:00Z' })).toBe('runAt must be a valid ISO 8601 date string');
  });

  it("documents the controllers' bodies under their titles, the schemas they validate against", () => {
    expect(WorkersController).toBeDefined(); // loaded: its decorators have registered its bodies
    expect(compiledBodySchemas().get('LeaseBody')).toBe(LeaseBody);
    expect(compiledBodySchemas().get('CompleteManyBody')).toBe(CompleteManyBody);
  });
});

describe('the compiled check of other bodies and of query strings', () => {
  const checkJob = compileBody(JobBody);

  it("says a pattern's rule however the field is described, and leaves a documented-only shape to its own check", () => {
    expect(refusal(checkJob, { queue: 'a/b' })).toBe(
      'queue must be a name of 1-200 characters: letters, digits, . _ -, starting with a letter or digit',
    );
    expect(refusal(checkJob, { queue: 'q', secretsAllowed: ['$.a', 'fixture'] })).toBe(
      'secretsAllowed.1 must be a path such as $.sftp.hostKey or $.hosts[0]',
    );
    expect(refusal(checkJob, { queue: 'q', retry: { maxAttempts: 0, baseSeconds: 1, maxSeconds: 1 } })).toBe(
      'retry.maxAttempts must not be less than 1',
    );
    expect(refusal(checkJob, { queue: 'q', schedule: 'daily' })).toBe('schedule must be an object');
    // The schedule's fields are the domain's to check (invalid-schedule), the payload any value.
    const job = { queue: 'q', schedule: { cron: 'nonsense', colour: 'red' }, payload: [1, null] };
    expect(checkJob(job)).toBe(job);
    expect(checkJob({ queue: 'q', retry: null, secretsAllowed: null, schedule: null })).toBeTruthy();
  });

  it('names the value itself as told, and says more and fewer than in words', () => {
    expect(refusal(compileBody(JobBody, 'definition'), 'x')).toBe('definition must be an object');
    const quotas = compileBody(object({ required: {}, optional: { rate: numberAbove(0, 10) } }, 'Quotas'));
    expect(refusal(quotas, { rate: 0 })).toBe('rate must be a positive number');
    expect(refusal(quotas, { rate: '5' })).toBe('rate must be a number');
    expect(refusal(quotas, { rate: 10.5 })).toBe('rate must not be greater than 10');
    expect(quotas({ rate: Number.MIN_VALUE })).toEqual({ rate: Number.MIN_VALUE });
    const named = compileBody(object({ required: { name: text({ minLength: 1, maxLength: 3 }) } }, 'Named'));
    expect(refusal(named, { name: '' })).toBe('name must be longer than or equal to 1 characters');
  });

  it('holds an instant to the strict ISO 8601 rule, however the document names its format', () => {
    const range = compileBody(object({ required: { from: dateTime() } }, 'Range'));
    for (const from of ['2026-03-15T01:00:00Z', '2026-03-15T01:00:00.123+01:00', '2024-02-29'])
      expect(range({ from })).toEqual({ from });
    for (const from of ['2026-03-15 01:00:00Z', '2026-02-30', 'yesterday', ''])
      expect(refusal(range, { from })).toBe('from must be a valid ISO 8601 date string');
  });

  const checkQuery = compileQuery(
    queryString({ cursor: text({ maxLength: 5 }), limit: integer(1, 500), since: dateTime() }),
  );

  it("reads a query string's numbers from their text, and takes its other parameters as sent", () => {
    const parsed = Object.assign(Object.create(null) as object, { cursor: 'abc', limit: '20' });
    expect(checkQuery(parsed)).toEqual({ cursor: 'abc', limit: 20 });
    expect(checkQuery({})).toEqual({});
  });

  it.each([
    [{ limit: '501' }, 'limit must not be greater than 500'],
    [{ limit: '0' }, 'limit must not be less than 1'],
    [{ limit: '' }, 'limit must not be less than 1'],
    [{ limit: 'abc' }, 'limit must be an integer number'],
    [{ limit: '1.5' }, 'limit must be an integer number'],
    [{ limit: ['1', '2'] }, 'limit must be an integer number'],
    [{ cursor: ['a', 'b'] }, 'cursor must be a string'],
    [{ cursor: 'abcdef' }, 'cursor must be shorter than or equal to 5 characters'],
    [{ since: 'yesterday' }, 'since must be a valid ISO 8601 date string'],
    [{ color: 'blue' }, 'property color should not exist'],
    [{ ['__proto__']: 'x' }, 'property __proto__ should not exist'],
  ])('refuses the query %p as a 400 naming the parameter', (parameters, detail) => {
    const parsed = Object.assign(Object.create(null) as object, parameters);
    expect(refusal(checkQuery, parsed)).toBe(detail);
  });
});
