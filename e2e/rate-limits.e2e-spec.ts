import { waitFor } from '@chronicle/testing';
import {
  apiClient,
  mostOverBucket,
  scrapeMetrics,
  startReplicas,
  type Replicas,
  type RunningApp,
  type TeamClients,
  replicaWorker,
} from './support';

const ADMIN_TOKEN = 'e2e-admin-token-rate-limits-0123456789';

interface Lease {
  runId: string;
  fencingToken: number;
  payload: { key?: string } | null;
}

/**
 * Rate limits (docs/api.md, "Rate limits"): a token bucket per job, per concurrency key and per queue,
 * kept in PostgreSQL, so that workers on every API process together never lease faster than it allows;
 * a worker whose runs are held back waits for the next token, not polling meanwhile.
 */
describe('rate limits', () => {
  let replicas: Replicas;
  let app: RunningApp;
  let second: RunningApp;
  let ops: TeamClients;

  beforeAll(async () => {
    replicas = await startReplicas(ADMIN_TOKEN);
    ({ app, second, ops } = replicas);
  });
  afterAll(() => replicas?.close());

  const { lease, complete } = replicaWorker<Lease>(() => ops);
  const enqueueMany = async (runs: ReadonlyArray<Record<string, unknown>>): Promise<string[]> => {
    const batch = await ops.team.post<{ runs: Array<{ runId: string }> }>('/v1/runs:batch', { runs });
    expect(batch.status).toBe(200);
    return batch.body.runs.map((r) => r.runId);
  };
  /** Four workers, two on each API process, lease and complete until `count` runs are done. */
  const drain = async (count: number): Promise<Lease[]> => {
    const leased: Lease[] = [];
    const deadline = Date.now() + 60_000;
    const worker = async (via: RunningApp): Promise<void> => {
      while (leased.length < count && Date.now() < deadline)
        for (const l of await lease(via, 5, 1)) {
          leased.push(l);
          await complete(l, via);
        }
    };
    await Promise.all([worker(app), worker(second), worker(app), worker(second)]);
    expect(leased).toHaveLength(count);
    return leased;
  };
  /** When each run was leased, by the database's clock, from its RunLeased. */
  const leasedAt = async (runIds: readonly string[]): Promise<number[]> => {
    const times = await Promise.all(
      runIds.map(async (id) => {
        const events = await ops.team.get<{ events: Array<{ type: string; data: { leasedAt?: string } }> }>(
          `/v1/runs/${id}/events`,
        );
        return Date.parse(events.body.events.find((e) => e.type === 'RunLeased')!.data.leasedAt!);
      }),
    );
    return times.sort((a, b) => a - b);
  };
  const claims = async (): Promise<number> => {
    const counts = await Promise.all(
      [app, second].map(
        async (via) => (await scrapeMetrics(via.url)).value('chronicle_claim_duration_seconds_count') ?? 0,
      ),
    );
    return counts[0]! + counts[1]!;
  };

  it("never leases a job's runs faster than its rate, with four workers on two API processes, and does not make them spin", async () => {
    const defined = await ops.team.put<{ rate: unknown }>('/v1/jobs/ops.partner', {
      queue: 'ops',
      rate: { limit: 5, per: 'second', burst: 3 },
    });
    expect(defined.status).toBe(201);
    expect(defined.body.rate).toEqual({ limit: 5, per: 'second', burst: 3 });
    const ids = await enqueueMany(Array.from({ length: 20 }, () => ({ job: 'ops.partner' })));
    const before = await claims();
    const started = Date.now();
    await drain(20);
    const took = Date.now() - started;
    const times = await leasedAt(ids);
    expect(mostOverBucket(times, 5, 3)).toBeLessThanOrEqual(0);
    // Held back, the workers waited for the next token: about (20 - 3) / 5 s in all, not much more.
    expect(took).toBeGreaterThan(2_500);
    expect(took).toBeLessThan(12_000);
    // Held back by the empty bucket, a lease call waits: each token wakes one of the waiting calls in each API
    // process (some 82 claims here, the one-second safety polls included). Waking every waiting call at each
    // token made some 125; a call that tried again every 20 ms for its first 250 ms, some 335.
    expect((await claims()) - before).toBeLessThan(150);
  });

  it("gives each concurrency key a bucket of its own with the job's keyRate, and shows the held-back runs in the metrics", async () => {
    await ops.team.put('/v1/jobs/ops.per-customer', {
      queue: 'ops',
      perKeyConcurrency: 10,
      keyRate: { limit: 2, per: 'second' },
    });
    const keys = ['customer-1', 'customer-2'];
    const ids = await enqueueMany(
      keys.flatMap((key) =>
        Array.from({ length: 6 }, () => ({ job: 'ops.per-customer', concurrencyKey: key, payload: { key } })),
      ),
    );
    const leased = await drain(12);
    for (const keyRuns of [ids.slice(0, 6), ids.slice(6)])
      expect(mostOverBucket(await leasedAt(keyRuns), 2, 2)).toBeLessThanOrEqual(0);
    // The keys went on side by side: the whole took about as long as one key's share, not two.
    const all = await leasedAt(ids);
    expect(all[all.length - 1]! - all[0]!).toBeLessThan(5_000);
    expect(leased).toHaveLength(12);

    // A job's own bucket empty, its ready runs show as held back.
    await ops.team.put('/v1/jobs/ops.slow', { queue: 'ops', rate: { limit: 1, per: 'hour' } });
    await enqueueMany(Array.from({ length: 3 }, () => ({ job: 'ops.slow' })));
    const first = await lease(app, 10, 1);
    expect(first).toHaveLength(1);
    await complete(first[0]!, app);
    expect(await lease(second, 10, 0)).toEqual([]);
    await waitFor(
      async () =>
        (await scrapeMetrics(second.url)).value('chronicle_rate_limited_runs', { limit: 'job:ops.slow' }) === 2,
      { description: 'chronicle_rate_limited_runs{limit="job:ops.slow"} 2' },
    );
    const tokens = (await scrapeMetrics(app.url)).value('chronicle_rate_limit_tokens', { limit: 'job:ops.slow' });
    expect(tokens).toBeLessThan(1);
    // Out of the way of the queue's test: paused, its held-back runs are not leased.
    expect((await ops.team.post('/v1/jobs/ops.slow:pause')).status).toBe(200);
  });

  it("holds a queue's runs of every job to the queue's rate, set by the admin, and records it", async () => {
    const admin = apiClient(app.url, ADMIN_TOKEN);
    const set = await admin.put<{ queue: string; concurrency: number | null; rate: unknown }>('/v1/queues/ops/limits', {
      rate: { limit: 4, per: 'second', burst: 2 },
    });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ queue: 'ops', concurrency: null, rate: { limit: 4, per: 'second', burst: 2 } });
    expect((await admin.get('/v1/queues/ops/limits')).body).toEqual(set.body);
    await ops.team.put('/v1/jobs/ops.a', { queue: 'ops' });
    await ops.team.put('/v1/jobs/ops.b', { queue: 'ops' });
    const ids = await enqueueMany([
      ...Array.from({ length: 6 }, () => ({ job: 'ops.a' })),
      ...Array.from({ length: 6 }, () => ({ job: 'ops.b' })),
    ]);
    await drain(12);
    expect(mostOverBucket(await leasedAt(ids), 4, 2)).toBeLessThanOrEqual(0);
    const trail = await admin.get<{ items: Array<{ type: string; data: { queue?: string; rate?: unknown } }> }>(
      '/v1/audit?type=QueueLimitsSet',
    );
    expect(trail.body.items[0]?.data).toMatchObject({ queue: 'ops', rate: { limit: 4, per: 'second', burst: 2 } });
    const removed = await admin.put<{ rate: unknown }>('/v1/queues/ops/limits', { rate: null });
    expect(removed.body.rate).toBeNull();
  });

  it('refuses a rate out of shape with a clear problem', async () => {
    for (const rate of [
      { limit: 0, per: 'second' },
      { limit: 5, per: 'week' },
      { per: 'minute' },
      { limit: 5, per: 'second', burst: 0 },
    ]) {
      const refused = await ops.team.put<{ type: string }>('/v1/jobs/ops.bad', { queue: 'ops', rate });
      expect([refused.status, refused.body.type]).toEqual([400, '/problems/validation-error']);
      expect(refused.contentType).toMatch(/^application\/problem\+json/);
    }
    const queue = await apiClient(app.url, ADMIN_TOKEN).put<{ type: string }>('/v1/queues/ops/limits', {
      rate: { limit: 1_000_001, per: 'second' },
    });
    expect([queue.status, queue.body.type]).toEqual([400, '/problems/validation-error']);
  });
});
