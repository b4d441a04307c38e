import {
  graphqlClient,
  scrapeMetrics,
  startReplicas,
  type Replicas,
  type RunningApp,
  type TeamClients,
  replicaWorker,
} from './support';

const ADMIN_TOKEN = 'e2e-admin-token-concurrency-keys-0123456';

interface Lease {
  runId: string;
  fencingToken: number;
  payload: { key?: string } | null;
}

/**
 * Concurrency per key (docs/api.md, "Dispatch: priorities, fairness, concurrency"): never more than a job's
 * perKeyConcurrency runs of one key leased at once, however many workers claim on however many API processes;
 * a run held back waits ready and is leased once its key frees.
 */
describe('concurrency per key', () => {
  let replicas: Replicas;
  let app: RunningApp;
  let second: RunningApp;
  let ops: TeamClients;

  beforeAll(async () => {
    replicas = await startReplicas(ADMIN_TOKEN);
    ({ app, second, ops } = replicas);
  });
  afterAll(() => replicas?.close());

  const worker = replicaWorker<Lease>(() => ops);
  const lease = (via = app, max = 100, waitSeconds = 0): Promise<Lease[]> => worker.lease(via, max, waitSeconds);
  const complete = (done: Lease, via = app): Promise<void> => worker.complete(done, via);
  /**
   * Leases until `count` runs are leased in all: a claim leases what it can lock at that instant, and with
   * the log in a database of its own the projector may hold a new run's lock a moment as it applies it.
   */
  const leaseCount = async (count: number): Promise<Lease[]> => {
    const leased: Lease[] = [];
    const deadline = Date.now() + 10_000;
    while (leased.length < count && Date.now() < deadline) leased.push(...(await lease(app, count - leased.length, 1)));
    expect(leased).toHaveLength(count);
    return leased;
  };
  const runOf = async (runId: string) =>
    (await ops.team.get<{ state: string; concurrencyKey: string | null }>(`/v1/runs/${runId}`)).body;

  it('never leases more than perKeyConcurrency runs of a key at once, with four workers on two API processes', async () => {
    expect((await ops.team.put('/v1/jobs/ops.sync', { queue: 'ops', perKeyConcurrency: 2 })).status).toBe(201);
    const keys = ['customer-1', 'customer-2', 'customer-3'];
    const runs = [
      ...keys.flatMap((key) =>
        Array.from({ length: 12 }, () => ({ job: 'ops.sync', concurrencyKey: key, payload: { key } })),
      ),
      ...Array.from({ length: 12 }, () => ({ job: 'ops.sync', payload: {} })),
    ];
    const batch = await ops.team.post<{ runs: Array<{ runId: string; concurrencyKey: string | null }> }>(
      '/v1/runs:batch',
      { runs },
    );
    expect(batch.status).toBe(200);
    expect(batch.body.runs.filter((r) => r.concurrencyKey === 'customer-2')).toHaveLength(12);

    const held = new Map<string, number>();
    const most = new Map<string, number>();
    let finished = 0;
    const deadline = Date.now() + 60_000;
    // Each worker completes what it leased one run at a time while the others claim: a key's runs overlap
    // wherever the claims let them.
    const worker = async (via: RunningApp): Promise<void> => {
      while (finished < runs.length && Date.now() < deadline) {
        const leases = await lease(via, 5, 1);
        for (const l of leases) {
          const key = l.payload?.key;
          if (key === undefined) continue;
          held.set(key, (held.get(key) ?? 0) + 1);
          most.set(key, Math.max(most.get(key) ?? 0, held.get(key)!));
        }
        for (const l of leases) {
          const key = l.payload?.key;
          // Counted as free before the completion is sent: what is counted is never more than is leased.
          if (key !== undefined) held.set(key, held.get(key)! - 1);
          await complete(l, via);
          finished++;
        }
      }
    };
    await Promise.all([worker(app), worker(second), worker(app), worker(second)]);
    expect(finished).toBe(runs.length);
    // Each key's limit was reached, never passed.
    expect(Object.fromEntries(most)).toEqual({ 'customer-1': 2, 'customer-2': 2, 'customer-3': 2 });
  });

  it('keeps a run of a busy key ready, leases other keys and none past it, and wakes a long poll when the key frees', async () => {
    await ops.team.put('/v1/jobs/ops.one', { queue: 'ops' });
    const enqueue = (key: string) =>
      ops.team.post<{ runId: string; concurrencyKey: string | null }>('/v1/jobs/ops.one/runs', {
        concurrencyKey: key,
        payload: { key },
      });
    const a = await enqueue('k');
    const b = await enqueue('k');
    const c = await enqueue('j');
    expect(a.body.concurrencyKey).toBe('k');
    const first = await leaseCount(2);
    // One run of a key at a time unless the job says more: one of k's (the older, unless a claim found it
    // locked a moment), and j's.
    expect(first.map((l) => l.payload?.key).sort()).toEqual(['j', 'k']);
    expect(first.map((l) => l.runId)).toContain(c.body.runId);
    const [leasedK, heldK] = first.some((l) => l.runId === a.body.runId) ? [a, b] : [b, a];
    expect(await runOf(heldK.body.runId)).toMatchObject({ state: 'ready', concurrencyKey: 'k' });
    expect(await lease()).toEqual([]);
    // A worker waiting while the only ready run is held back does not spin: it is woken when a run ends,
    // and meanwhile its poll looks again once a second at most (after a short grace for locked runs).
    const claims = async (): Promise<number> =>
      (await scrapeMetrics(second.url)).value('chronicle_claim_duration_seconds_count') ?? 0;
    const before = await claims();
    expect(await lease(second, 10, 2)).toEqual([]);
    expect((await claims()) - before).toBeLessThan(25);
    // A worker waits on the other API process; the completion frees the key, and the waiting run comes.
    const waiting = lease(second, 10, 20);
    await complete(first.find((l) => l.runId === leasedK.body.runId)!);
    const woken = await waiting;
    expect(woken.map((l) => l.runId)).toEqual([heldK.body.runId]);
    for (const l of [...woken, ...first.filter((f) => f.runId !== leasedK.body.runId)]) await complete(l);
  });

  it('takes a raised perKeyConcurrency at the next claim, for runs already waiting', async () => {
    await ops.team.put('/v1/jobs/ops.raise', { queue: 'ops', perKeyConcurrency: 1 });
    for (let i = 0; i < 3; i++)
      await ops.team.post('/v1/jobs/ops.raise/runs', { concurrencyKey: 'k', payload: { key: 'k' } });
    const before = await leaseCount(1);
    expect(await lease()).toEqual([]);
    const raised = await ops.team.put<{ perKeyConcurrency: number }>('/v1/jobs/ops.raise', {
      queue: 'ops',
      perKeyConcurrency: 3,
    });
    expect([raised.status, raised.body.perKeyConcurrency]).toEqual([200, 3]);
    const after = await leaseCount(2);
    expect(await lease()).toEqual([]);
    for (const l of [...before, ...after]) await complete(l);
  });

  it('records the key in the run, its RunScheduled and GraphQL, and refuses a key or limit out of shape', async () => {
    const gql = graphqlClient(app.url, ops.teamToken);
    const made = await gql<{ enqueueRun: { id: string; concurrencyKey: string } }>(
      'mutation { enqueueRun(job: "ops.one", concurrencyKey: "gql-key") { id concurrencyKey } }',
    );
    expect(made.errors).toBeUndefined();
    expect(made.data?.enqueueRun.concurrencyKey).toBe('gql-key');
    const events = await ops.team.get<{ events: Array<{ type: string; data: { concurrencyKey?: string } }> }>(
      `/v1/runs/${made.data!.enqueueRun.id}/events`,
    );
    expect(events.body.events.find((e) => e.type === 'RunScheduled')?.data.concurrencyKey).toBe('gql-key');
    for (const l of await lease()) await complete(l);

    const badLimit = await ops.team.put<{ type: string; field: string }>('/v1/jobs/ops.bad', {
      queue: 'ops',
      perKeyConcurrency: 0,
    });
    expect([badLimit.status, badLimit.body.type]).toEqual([400, '/problems/validation-error']);
    const badKey = await ops.team.post<{ type: string }>('/v1/jobs/ops.one/runs', { concurrencyKey: 'has space' });
    expect([badKey.status, badKey.body.type]).toEqual([400, '/problems/validation-error']);
    expect(badKey.contentType).toMatch(/^application\/problem\+json/);
  });
});
