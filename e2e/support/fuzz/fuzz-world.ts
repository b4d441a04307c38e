import { apiClient, type ApiClient } from '../api-client';
import { createTeam } from '../team-tokens';

/** The kinds of value the world holds, which generated requests name by index (WorldValue). */
export const WORLD_POOLS = [
  'team',
  'job',
  'queue',
  'run',
  'fencingToken',
  'tokenId',
  'cursor',
  'idempotencyKey',
  'instant',
] as const;
export type WorldPool = (typeof WORLD_POOLS)[number];
export type PickValue = (pool: WorldPool, n: number) => string | number;

/** Who a request is sent as: the world's tokens, by the kind a generated request asks for. */
export const CALLERS = ['admin', 'team', 'worker', 'otherTeam', 'otherWorker', 'platformWorker'] as const;
export type CallerKind = (typeof CALLERS)[number];

export interface FuzzWorld {
  readonly tokens: Readonly<Record<CallerKind, string>>;
  readonly pick: PickValue;
  /** Remembers the run ids and fencing tokens of an answer, so that later requests can name them. */
  learnFrom(body: unknown): void;
}

/** How many values a pool keeps at most: the newest learned ones replace the oldest. */
const POOL_SIZE = 40;

/**
 * A small, realistic world, made over HTTP as users make it: two teams with their team and worker
 * tokens, a platform worker serving one team's queue, jobs (one scheduled, one that dies at its first
 * failure), runs in every state (ready, leased, succeeded, dead, cancelled), a dead letter, and tokens
 * that generated requests may revoke (never those the requests are sent with).
 */
export async function createFuzzWorld(baseUrl: string, adminToken: string): Promise<FuzzWorld> {
  const admin = apiClient(baseUrl, adminToken);
  const ops = await createTeam(baseUrl, adminToken, 'ops', ['ops']);
  const billing = await createTeam(baseUrl, adminToken, 'billing', ['billing']);
  const platform = await expectStatus(admin.post('/v1/tokens', { kind: 'worker', queues: ['ops'] }), 201);
  await expectStatus(admin.post('/v1/queues/ops/grants', { team: 'ops' }), 200);
  const victims = await Promise.all(
    ['team', 'worker'].map((kind) => expectStatus(admin.post('/v1/teams/ops/tokens', { kind, queues: ['ops'] }), 201)),
  );
  const victimPlatform = await expectStatus(admin.post('/v1/tokens', { kind: 'worker', queues: ['billing'] }), 201);

  await expectStatus(ops.team.put('/v1/jobs/ops.task', { queue: 'ops', retry: RETRY }), 201);
  await expectStatus(
    ops.team.put('/v1/jobs/ops.nightly', { queue: 'ops', schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin' } }),
    201,
  );
  await expectStatus(ops.team.put('/v1/jobs/ops.fragile', { queue: 'ops', retry: { ...RETRY, maxAttempts: 1 } }), 201);
  await expectStatus(
    billing.team.put('/v1/jobs/billing.export', { queue: 'billing', payload: { format: 'csv' } }),
    201,
  );

  const enqueue = async (client: ApiClient, job: string, body: object = {}): Promise<string> =>
    (await expectStatus(client.post(`/v1/jobs/${job}/runs`, body), 201))['runId'] as string;
  const lease = async (): Promise<{ runId: string; fencingToken: number }> => {
    const { leases } = await expectStatus(ops.worker.post('/v1/lease', { queues: ['ops'], max: 1 }), 200);
    return (leases as Array<{ runId: string; fencingToken: number }>)[0]!;
  };
  // One at a time, so that each lease takes the run just enqueued.
  const dead = await enqueue(ops.team, 'ops.fragile');
  const dying = await lease();
  const complete = async (run: string, fencingToken: number, outcome: object): Promise<void> =>
    void (await expectStatus(ops.worker.post(`/v1/runs/${run}/complete`, { fencingToken, ...outcome }), 200));
  await complete(dead, dying.fencingToken, { outcome: 'failure', error: 'disk full' });
  const succeeded = await enqueue(ops.team, 'ops.task');
  await complete(succeeded, (await lease()).fencingToken, { outcome: 'success' });
  const leased = await enqueue(ops.team, 'ops.task', { payload: { step: 1 } });
  const held = await lease();
  const cancelled = await enqueue(ops.team, 'ops.task', { delaySeconds: 3600 });
  await expectStatus(ops.team.post(`/v1/runs/${cancelled}:cancel`), 200);
  const ready = await enqueue(ops.team, 'ops.task');
  const keyed = (
    await expectStatus(ops.team.raw('POST', '/v1/jobs/ops.task/runs', {}, { 'idempotency-key': 'fuzz-key-1' }), 201)
  )['runId'] as string;
  const billed = await enqueue(billing.team, 'billing.export');
  const page = await expectStatus(admin.get('/v1/runs?limit=1'), 200);
  const auditPage = await expectStatus(admin.get('/v1/audit?limit=1'), 200);

  const pools: Record<WorldPool, Array<string | number>> = {
    team: ['ops', 'billing', 'nobody'],
    job: ['ops.task', 'ops.nightly', 'ops.fragile', 'billing.export', 'ops.never-defined'],
    queue: ['ops', 'billing', 'nobody'],
    run: [leased, ready, succeeded, dead, cancelled, keyed, billed, 'run_0000000000000000000000000000'],
    fencingToken: [held.fencingToken, dying.fencingToken, 0, 1],
    tokenId: [...victims.map((v) => v['id'] as string), victimPlatform['id'] as string, 'tok_unknown'],
    cursor: [page['nextCursor'] as string, auditPage['nextCursor'] as string],
    idempotencyKey: ['fuzz-key-1', `ops.nightly@2026-03-15T02:00:00+01:00`],
    instant: [new Date(Date.now() - 3_600_000).toISOString(), new Date(Date.now() + 3_600_000).toISOString()],
  };
  const learn = (pool: 'run' | 'fencingToken', value: string | number): void => {
    const values = pools[pool];
    if (values.includes(value)) return;
    if (values.length >= POOL_SIZE) values.splice(2, 1); // the world's first ones stay
    values.push(value);
  };
  return {
    tokens: {
      admin: adminToken,
      team: ops.teamToken,
      worker: ops.workerToken,
      otherTeam: billing.teamToken,
      otherWorker: billing.workerToken,
      platformWorker: platform['token'] as string,
    },
    pick: (pool, n) => pools[pool][n % pools[pool].length]!,
    learnFrom: (body) =>
      visitValues(body, (key, value) => {
        if (key === 'fencingToken' && typeof value === 'number') learn('fencingToken', value);
        else if (typeof value === 'string' && /^run_[A-Za-z0-9_-]{1,64}$/.test(value)) learn('run', value);
      }),
  };
}

const RETRY = { maxAttempts: 3, baseSeconds: 0, maxSeconds: 0 };

async function expectStatus(
  answer: Promise<{ status: number; body: Record<string, unknown> }>,
  status: number,
): Promise<Record<string, unknown>> {
  const { status: actual, body } = await answer;
  if (actual !== status)
    throw new Error(`the fuzz world's set-up expected ${status}, got ${actual}: ${JSON.stringify(body)}`);
  return body;
}

function visitValues(value: unknown, visit: (key: string, value: unknown) => void, depth = 0): void {
  if (depth > 8 || value === null || typeof value !== 'object') return;
  for (const [key, item] of Object.entries(value)) {
    visit(key, item);
    visitValues(item, visit, depth + 1);
  }
}
