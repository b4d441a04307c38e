import { PROJECTIONS, verifyProjections } from '@chronicle/projections';
import { apiClient, graphqlClient, startReplicas, type Replicas, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-unique-runs-0123456789';

interface Run {
  runId: string;
  state: string;
  uniqueKey: string | null;
}

/** Unique runs (docs/api.md, "Unique runs"): one run per key while the job's rule says it holds it. */
describe('unique runs', () => {
  let replicas: Replicas;
  let db: Replicas['db'];
  let app: RunningApp;
  let second: RunningApp;
  let ops: TeamClients;

  beforeAll(async () => {
    replicas = await startReplicas(ADMIN_TOKEN);
    ({ db, app, second, ops } = replicas);
  });
  afterAll(() => replicas?.close());

  const enqueue = (job: string, body: Record<string, unknown>, via = app) =>
    apiClient(via.url, ops.teamToken).post<Run & { type?: string }>(`/v1/jobs/${job}/runs`, body);
  const leaseAll = async (): Promise<Array<{ runId: string; fencingToken: number }>> =>
    (
      await ops.worker.post<{ leases: Array<{ runId: string; fencingToken: number }> }>('/v1/lease', {
        queues: ['ops'],
        max: 100,
        waitSeconds: 0,
      })
    ).body.leases;
  /**
   * Leases until this run is among the leases (others leased on the way stay leased): a claim leases what it
   * can lock at that instant, and with the log in a database of its own the projector may hold a new run's
   * lock a moment as it applies its events.
   */
  const leaseRun = async (runId: string): Promise<{ runId: string; fencingToken: number }> => {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const found = (await leaseAll()).find((l) => l.runId === runId);
      if (found !== undefined) return found;
    }
    throw new Error(`run ${runId} was not leased within 10 s`);
  };
  const complete = async (lease: { runId: string; fencingToken: number }): Promise<void> => {
    const answer = await ops.worker.post(`/v1/runs/${lease.runId}/complete`, {
      fencingToken: lease.fencingToken,
      outcome: 'success',
    });
    expect(answer.status).toBe(200);
  };

  it('makes one run of many enqueues of a key at once, over two API processes, and answers each with it', async () => {
    await ops.team.put('/v1/jobs/ops.sync', { queue: 'ops' });
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        enqueue('ops.sync', { uniqueKey: 'customer-1' }, i % 2 === 0 ? app : second),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(19);
    expect(new Set(answers.map((a) => a.body.runId)).size).toBe(1);
    expect(answers[0]!.body.uniqueKey).toBe('customer-1');
    // Another key, or none, makes its own run.
    expect((await enqueue('ops.sync', { uniqueKey: 'customer-2' })).status).toBe(201);
    expect((await enqueue('ops.sync', {})).status).toBe(201);
    const listed = await ops.team.get<{ items: Run[] }>('/v1/runs?job=ops.sync&limit=100');
    expect(listed.body.items.filter((r) => r.uniqueKey === 'customer-1')).toHaveLength(1);
  });

  it('while-pending: frees the key once its run is leased; ifDuplicate: reject refuses with the holder named', async () => {
    await ops.team.put('/v1/jobs/ops.pending', { queue: 'ops' });
    const first = await enqueue('ops.pending', { uniqueKey: 'k' });
    expect(first.status).toBe(201);
    const refused = await enqueue('ops.pending', { uniqueKey: 'k', ifDuplicate: 'reject' });
    expect(refused.status).toBe(409);
    expect(refused.contentType).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ type: '/problems/duplicate-run', status: 409, runId: first.body.runId });
    await leaseRun(first.body.runId);
    const after = await enqueue('ops.pending', { uniqueKey: 'k' });
    expect(after.status).toBe(201);
    expect(after.body.runId).not.toBe(first.body.runId);
  });

  it('while-not-finished: holds the key while leased, frees it when the run succeeds', async () => {
    await ops.team.put('/v1/jobs/ops.busy', { queue: 'ops', unique: { scope: 'while-not-finished' } });
    const first = await enqueue('ops.busy', { uniqueKey: 'k' });
    const held = await leaseRun(first.body.runId);
    const again = await enqueue('ops.busy', { uniqueKey: 'k' });
    expect([again.status, again.body.runId, again.body.state]).toEqual([200, first.body.runId, 'leased']);
    await complete(held);
    const next = await enqueue('ops.busy', { uniqueKey: 'k' });
    expect(next.status).toBe(201);
    expect(next.body.runId).not.toBe(first.body.runId);
  });

  it('for: holds the key for its time whatever the run does, and a batch holds one run per key', async () => {
    await ops.team.put('/v1/jobs/ops.hourly', { queue: 'ops', unique: { scope: 'for', seconds: 3600 } });
    const batch = await ops.team.post<{ runs: Array<Run & { created: boolean }> }>('/v1/runs:batch', {
      runs: [
        { job: 'ops.hourly', uniqueKey: 'a' },
        { job: 'ops.hourly', uniqueKey: 'a' },
        { job: 'ops.hourly', uniqueKey: 'b' },
      ],
    });
    expect(batch.status).toBe(200);
    const [a1, a2, b] = batch.body.runs;
    expect([a1!.created, a2!.created, b!.created]).toEqual([true, false, true]);
    expect(a2!.runId).toBe(a1!.runId);
    await complete(await leaseRun(a1!.runId));
    const again = await enqueue('ops.hourly', { uniqueKey: 'a' });
    expect([again.status, again.body.runId, again.body.state]).toEqual([200, a1!.runId, 'succeeded']);
  });

  it('refuses a rule without its seconds, and a key out of shape, with a clear problem', async () => {
    const noSeconds = await ops.team.put<{ type: string; field: string }>('/v1/jobs/ops.bad', {
      queue: 'ops',
      unique: { scope: 'for' },
    });
    expect([noSeconds.status, noSeconds.body.type, noSeconds.body.field]).toEqual([
      400,
      '/problems/validation-error',
      'unique.seconds',
    ]);
    const badScope = await ops.team.put<{ type: string }>('/v1/jobs/ops.bad', { queue: 'ops', unique: { scope: 'x' } });
    expect([badScope.status, badScope.body.type]).toEqual([400, '/problems/validation-error']);
    const badKey = await enqueue('ops.sync', { uniqueKey: 'has space' });
    expect([badKey.status, badKey.body.type]).toEqual([400, '/problems/validation-error']);
  });

  it('GraphQL: enqueueRun with a uniqueKey answers the run that holds it, or duplicate-run', async () => {
    const gql = graphqlClient(app.url, ops.teamToken);
    const mutation = `mutation ($key: String, $if: String) {
      enqueueRun(job: "ops.sync", uniqueKey: $key, ifDuplicate: $if) { id uniqueKey } }`;
    const first = await gql<{ enqueueRun: { id: string; uniqueKey: string } }>(mutation, { key: 'gql-1' });
    expect(first.data?.enqueueRun.uniqueKey).toBe('gql-1');
    const same = await gql<{ enqueueRun: { id: string } }>(mutation, { key: 'gql-1' });
    expect(same.data?.enqueueRun.id).toBe(first.data?.enqueueRun.id);
    const refused = await gql(mutation, { key: 'gql-1', if: 'reject' });
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'duplicate-run', runId: first.data?.enqueueRun.id });
  });

  it('keeps a key in the row of a run only while it may hold it, as a rebuild from the log writes it', async () => {
    const { rows } = await db.pool.query<{ state: string; scope: string; kept: boolean }>(
      `SELECT r.state, l.definition->'unique'->>'scope' AS scope, r.unique_key IS NOT NULL AS kept
         FROM runs r JOIN run_listing l USING (run_id, kept_on) WHERE l.definition ? 'unique'`,
    );
    const mayHold = {
      'while-pending': ['scheduled', 'retry_wait'],
      'while-not-finished': ['scheduled', 'retry_wait', 'leased'],
    };
    for (const { state, scope, kept } of rows)
      expect({ state, scope, kept }).toEqual({
        state,
        scope,
        kept: scope === 'for' || mayHold[scope as keyof typeof mayHold].includes(state),
      });
    // Runs of each kind were there to check: leased and finished ones that let their keys go, and others.
    expect(rows.filter((r) => r.kept).length).toBeGreaterThan(2);
    expect(rows.filter((r) => !r.kept).length).toBeGreaterThan(2);
    const verified = await verifyProjections(db.eventStore, db.pool, PROJECTIONS);
    expect(verified.differences).toEqual([]);
  });
});
