import { PROJECTIONS, verifyProjections } from '@chronicle/projections';
import {
  apiClient,
  graphqlClient,
  startReplicas,
  type Replicas,
  type RunningApp,
  type TeamClients,
  replicaWorker,
} from './support';

const ADMIN_TOKEN = 'e2e-admin-token-ordering-keys-01234567';

interface Lease {
  runId: string;
  attempt: number;
  fencingToken: number;
  payload: { key?: string; failFirst?: boolean } | null;
}

interface Enqueued {
  runId: string;
  orderingKey: string | null;
  orderingSeq: number | null;
}

/**
 * Order per key (docs/api.md, "Order per key"): a job's runs with one ordering key are leased one at a time,
 * in the order they were enqueued, however many workers claim on however many API processes; a failed run
 * with retries left holds its key (hold, the default) or lets the key's later runs go on (skip).
 */
describe('order per key', () => {
  let replicas: Replicas;
  let app: RunningApp;
  let second: RunningApp;
  let ops: TeamClients;
  let db: Replicas['db'];

  beforeAll(async () => {
    replicas = await startReplicas(ADMIN_TOKEN);
    ({ db, app, second, ops } = replicas);
  });
  afterAll(() => replicas?.close());

  const worker = replicaWorker<Lease>(() => ops);
  const lease = (via = app, max = 100, waitSeconds = 0): Promise<Lease[]> => worker.lease(via, max, waitSeconds);
  const complete = (done: Lease, outcome: 'success' | 'failure' = 'success', via = app): Promise<void> =>
    worker.complete(done, via, outcome);
  /** Leases until a run is leased: with the log in a database of its own, the projector may hold a new run's lock a moment. */
  const leaseOne = async (): Promise<Lease> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const [first, ...rest] = await lease(app, 1, 1);
      expect(rest).toEqual([]);
      if (first !== undefined) return first;
      if (Date.now() > deadline) throw new Error('no run leased within 10 s');
    }
  };
  const enqueue = async (job: string, key: string, via = app, extra: Record<string, unknown> = {}) => {
    const answer = await apiClient(via.url, ops.teamToken).post<Enqueued>(`/v1/jobs/${job}/runs`, {
      orderingKey: key,
      payload: { key, ...extra },
      ...('delaySeconds' in extra ? { delaySeconds: extra['delaySeconds'] } : {}),
    });
    expect(answer.status).toBe(201);
    return answer.body;
  };
  const stateOf = async (runId: string): Promise<string> =>
    (await ops.team.get<{ state: string }>(`/v1/runs/${runId}`)).body.state;

  it('leases each key one run at a time in enqueue order, with four workers on two API processes, holding a key for a retry', async () => {
    // Retries at once (no backoff): a failed run is ready again straight away, and still comes before its key's later runs.
    const retry = { maxAttempts: 3, baseSeconds: 0, maxSeconds: 0 };
    expect((await ops.team.put('/v1/jobs/ops.ledger', { queue: 'ops', retry })).status).toBe(201);
    const keys = ['account-1', 'account-2', 'account-3'];
    const order = new Map<string, string[]>(keys.map((k) => [k, []]));
    const failing = new Set<string>();
    // Enqueued one after the other through both API processes, keys interleaved; every fourth run fails its first attempt.
    for (let i = 0; i < 30; i++) {
      const key = keys[i % keys.length]!;
      const run = await enqueue('ops.ledger', key, i % 2 === 0 ? app : second, { failFirst: i % 4 === 1 });
      expect(run.orderingKey).toBe(key);
      order.get(key)!.push(run.runId);
      if (i % 4 === 1) failing.add(run.runId);
    }
    // Each run's place grows in its key's order as the enqueues were answered.
    const seqs = await Promise.all(
      order.get('account-1')!.map(async (id) => (await ops.team.get<Enqueued>(`/v1/runs/${id}`)).body.orderingSeq!),
    );
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);

    const leasedInOrder = new Map<string, string[]>(keys.map((k) => [k, []]));
    const held = new Map<string, number>();
    let most = 0;
    let finished = 0;
    const deadline = Date.now() + 60_000;
    const worker = async (via: RunningApp): Promise<void> => {
      while (finished < 30 && Date.now() < deadline) {
        const leases = await lease(via, 5, 1);
        for (const l of leases) {
          const key = l.payload!.key!;
          held.set(key, (held.get(key) ?? 0) + 1);
          most = Math.max(most, held.get(key)!);
          leasedInOrder.get(key)!.push(l.runId);
        }
        for (const l of leases) {
          const key = l.payload!.key!;
          // Counted as free before the completion is sent: what is counted is never more than is leased.
          held.set(key, held.get(key)! - 1);
          const fails = l.payload!.failFirst === true && l.attempt === 1;
          await complete(l, fails ? 'failure' : 'success', via);
          if (!fails) finished++;
        }
      }
    };
    await Promise.all([worker(app), worker(second), worker(app), worker(second)]);
    expect(finished).toBe(30);
    expect(most).toBe(1);
    // Strictly in enqueue order; a failed run leased again at once, before its key's next run.
    for (const key of keys) {
      const expected = order.get(key)!.flatMap((id) => (failing.has(id) ? [id, id] : [id]));
      expect(leasedInOrder.get(key)).toEqual(expected);
    }
  });

  it("holds a key while its failed run waits for its retry, and frees it when that run ends (hold, the job's default)", async () => {
    const retry = { maxAttempts: 3, baseSeconds: 86_400, maxSeconds: 604_800 };
    await ops.team.put('/v1/jobs/ops.hold', { queue: 'ops', retry });
    const a = await enqueue('ops.hold', 'k');
    const b = await enqueue('ops.hold', 'k');
    const other = await enqueue('ops.hold', 'other');
    const first = [await leaseOne(), await leaseOne()];
    expect(first.map((l) => l.runId).sort()).toEqual([a.runId, other.runId].sort());
    await complete(
      first.find((l) => l.runId === a.runId)!,
      'failure',
    );
    expect(await stateOf(a.runId)).toBe('retry_wait');
    // b waits behind a's retry, ready and not leased.
    expect(await lease()).toEqual([]);
    expect(await stateOf(b.runId)).toBe('ready');
    // A worker waiting on the other process is woken when a's end frees the key.
    const waiting = lease(second, 10, 20);
    expect((await ops.team.post(`/v1/runs/${a.runId}:cancel`)).status).toBe(200);
    const woken = await waiting;
    expect(woken.map((l) => l.runId)).toEqual([b.runId]);
    for (const l of [...woken, ...first.filter((f) => f.runId === other.runId)]) await complete(l);
  });

  it("lets a key's later runs go on while a failed run waits for its retry when the job skips, and keeps a later run behind an earlier one due later", async () => {
    const retry = { maxAttempts: 3, baseSeconds: 86_400, maxSeconds: 604_800 };
    const defined = await ops.team.put<{ orderingOnRetry: string }>('/v1/jobs/ops.skip', {
      queue: 'ops',
      retry,
      orderingOnRetry: 'skip',
    });
    expect(defined.body.orderingOnRetry).toBe('skip');
    const a = await enqueue('ops.skip', 'k');
    const b = await enqueue('ops.skip', 'k');
    const leasedA = await leaseOne();
    expect(leasedA.runId).toBe(a.runId);
    await complete(leasedA, 'failure');
    const leasedB = await leaseOne();
    expect(leasedB.runId).toBe(b.runId);
    await complete(leasedB);
    expect((await ops.team.post(`/v1/runs/${a.runId}:cancel`)).status).toBe(200);

    // Enqueue order, not due time: a run enqueued after one due in an hour waits for it.
    const later = await enqueue('ops.skip', 'd', app, { delaySeconds: 3600 });
    const now = await enqueue('ops.skip', 'd');
    expect(await lease()).toEqual([]);
    expect(await stateOf(now.runId)).toBe('ready');
    expect((await ops.team.post(`/v1/runs/${later.runId}:cancel`)).status).toBe(200);
    const leasedNow = await leaseOne();
    expect(leasedNow.runId).toBe(now.runId);
    await complete(leasedNow);
  });

  it('records the key and its place in the RunScheduled, REST and GraphQL, and refuses a key or rule out of shape', async () => {
    const gql = graphqlClient(app.url, ops.teamToken);
    const made = await gql<{ enqueueRun: { id: string; orderingKey: string; orderingSeq: number } }>(
      'mutation { enqueueRun(job: "ops.ledger", orderingKey: "gql-key") { id orderingKey orderingSeq } }',
    );
    expect(made.errors).toBeUndefined();
    expect(made.data?.enqueueRun.orderingKey).toBe('gql-key');
    const events = await ops.team.get<{
      events: Array<{ type: string; data: { ordering?: { key: string; seq: number } } }>;
    }>(`/v1/runs/${made.data!.enqueueRun.id}/events`);
    expect(events.body.events.find((e) => e.type === 'RunScheduled')?.data.ordering).toEqual({
      key: 'gql-key',
      seq: made.data!.enqueueRun.orderingSeq,
    });
    // A batch's runs of one key take their places in the batch's order.
    const batch = await ops.team.post<{ runs: Enqueued[] }>('/v1/runs:batch', {
      runs: [1, 2, 3].map((n) => ({ job: 'ops.ledger', orderingKey: 'batch-key', payload: { key: 'batch-key', n } })),
    });
    expect(batch.status).toBe(200);
    const places = batch.body.runs.map((r) => r.orderingSeq!);
    expect(places[1]! - places[0]!).toBe(1);
    expect(places[2]! - places[1]!).toBe(1);
    // Out of the way: the GraphQL run and the batch's three, each leased in its turn.
    let done = 0;
    for (const deadline = Date.now() + 10_000; done < 4 && Date.now() < deadline;)
      for (const l of await lease(app, 10, 1)) {
        await complete(l);
        done++;
      }
    expect(done).toBe(4);

    const badRule = await ops.team.put<{ type: string }>('/v1/jobs/ops.bad', {
      queue: 'ops',
      orderingOnRetry: 'later',
    });
    expect([badRule.status, badRule.body.type]).toEqual([400, '/problems/validation-error']);
    const badKey = await ops.team.post<{ type: string }>('/v1/jobs/ops.ledger/runs', { orderingKey: 'has space' });
    expect([badKey.status, badKey.body.type]).toEqual([400, '/problems/validation-error']);
    expect(badKey.contentType).toMatch(/^application\/problem\+json/);
  });

  it("writes each run's key and place to its rows as a rebuild from the log writes them", async () => {
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM runs WHERE ordering_key IS NOT NULL AND ordering_seq IS NOT NULL',
    );
    expect(rows[0]!.n).toBeGreaterThan(30);
    const verified = await verifyProjections(db.eventStore, db.pool, PROJECTIONS);
    expect(verified.differences).toEqual([]);
  });
});
