import { PROJECTIONS, verifyProjections } from '@chronicle/projections';
import { apiClient, graphqlClient, startReplicas, type Replicas, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-debounced-runs-0123456';

interface Run {
  runId: string;
  state: string;
  dueAt: string;
  availableAt: string;
  debounceKey: string | null;
}
interface RunEvents {
  events: Array<{ type: string; revision: number; data: Record<string, unknown>; metadata: { actor: string } }>;
}
interface Lease {
  runId: string;
  fencingToken: number;
  payload: unknown;
}

/** Debounced runs (docs/api.md, "Debounced runs"): one waiting run per key, moved and given the newest payload. */
describe('debounced runs', () => {
  let replicas: Replicas;
  let db: Replicas['db'];
  let app: RunningApp;
  let second: RunningApp;
  let ops: TeamClients;

  beforeAll(async () => {
    replicas = await startReplicas(ADMIN_TOKEN);
    ({ db, app, second, ops } = replicas);
    // One second: runs become ready soon enough to lease, and a ready run not leased yet is still moved.
    expect((await ops.team.put('/v1/jobs/ops.reindex', { queue: 'ops', debounce: { seconds: 1 } })).status).toBe(201);
  });
  afterAll(() => replicas?.close());

  const enqueue = (body: Record<string, unknown>, via = app, job = 'ops.reindex') =>
    apiClient(via.url, ops.teamToken).post<Run & { type?: string; field?: string }>(`/v1/jobs/${job}/runs`, body);
  const eventsOf = async (runId: string) => (await ops.team.get<RunEvents>(`/v1/runs/${runId}/events`)).body.events;
  const waitingWithKey = async (key: string): Promise<Array<{ run_id: string }>> =>
    (
      await db.pool.query<{ run_id: string }>(
        `SELECT run_id FROM runs WHERE job = 'ops.reindex' AND state = 'scheduled'
            AND run_id IN (SELECT run_id FROM run_listing WHERE definition->>'debounceKey' = $1)`,
        [key],
      )
    ).rows;
  /** Leases until this run is among the leases (others leased on the way stay leased), within 10 s. */
  const leaseRun = async (runId: string): Promise<Lease> => {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const { body } = await ops.worker.post<{ leases: Lease[] }>('/v1/lease', {
        queues: ['ops'],
        max: 100,
        waitSeconds: 1,
      });
      const found = body.leases.find((l) => l.runId === runId);
      if (found !== undefined) return found;
    }
    throw new Error(`run ${runId} was not leased within 10 s`);
  };

  it('keeps one waiting run of many enqueues of a key at once, over two API processes, with each replacement an event', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        enqueue({ debounceKey: 'doc-1', payload: { version: i } }, i % 2 === 0 ? app : second),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(19);
    const runIds = new Set(answers.map((a) => a.body.runId));
    expect(runIds.size).toBe(1);
    const [runId] = runIds;
    expect(await waitingWithKey('doc-1')).toEqual([{ run_id: runId }]);

    // Its stream: made once, moved by each of the others, by the team's token.
    const events = await eventsOf(runId!);
    expect(events.map((e) => e.type)).toEqual(['RunScheduled', ...Array<string>(19).fill('RunDebounced')]);
    expect(events.every((e) => e.metadata.actor === events[0]!.metadata.actor)).toBe(true);
    const last = events.at(-1)!.data as { debouncedAt: string; availableAt: string; payload: { version: number } };
    expect(Date.parse(last.availableAt) - Date.parse(last.debouncedAt)).toBe(1000);
    // Every payload but the first replaced one before it; the newest is the run's.
    const versions = events.map((e) => (e.data['payload'] as { version: number }).version);
    expect(new Set(versions).size).toBe(20);

    const run = (await ops.team.get<Run>(`/v1/runs/${runId}`)).body;
    expect(run).toMatchObject({ debounceKey: 'doc-1', availableAt: last.availableAt });
    expect(Date.parse(run.availableAt)).toBeGreaterThan(Date.parse(run.dueAt));
    // The worker gets the newest payload.
    expect((await leaseRun(runId!)).payload).toEqual(last.payload);
  });

  it('makes a new run once the waiting one is leased, and moves that one after', async () => {
    const first = await enqueue({ debounceKey: 'doc-2', payload: 'a' });
    expect(first.status).toBe(201);
    await leaseRun(first.body.runId);
    const next = await enqueue({ debounceKey: 'doc-2', payload: 'b' });
    expect(next.status).toBe(201);
    expect(next.body.runId).not.toBe(first.body.runId);
    const moved = await enqueue({ debounceKey: 'doc-2', payload: 'c' }, second);
    expect([moved.status, moved.body.runId]).toEqual([200, next.body.runId]);
    expect(await waitingWithKey('doc-2')).toEqual([{ run_id: next.body.runId }]);
    expect((await eventsOf(first.body.runId)).map((e) => e.type)).toEqual(['RunScheduled', 'RunLeased']);
  });

  it('a batch moves the waiting runs of its keys and makes the others, with a large payload by reference', async () => {
    const waiting = await enqueue({ debounceKey: 'doc-3', payload: 'small' });
    const large = { text: 'x'.repeat(10_000) };
    const batch = await ops.team.post<{ runs: Array<Run & { created: boolean }> }>('/v1/runs:batch', {
      runs: [
        { job: 'ops.reindex', debounceKey: 'doc-3', payload: large },
        { job: 'ops.reindex', debounceKey: 'doc-4', payload: 'new' },
        { job: 'ops.reindex', payload: 'no key' },
      ],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.runs.map((r) => [r.created, r.debounceKey])).toEqual([
      [false, 'doc-3'],
      [true, 'doc-4'],
      [true, null],
    ]);
    expect(batch.body.runs[0]!.runId).toBe(waiting.body.runId);
    const debounced = (await eventsOf(waiting.body.runId)).at(-1)!;
    expect(debounced).toMatchObject({ type: 'RunDebounced', data: { payload: null, payloadRef: { bytes: 10_011 } } });
    expect((await leaseRun(waiting.body.runId)).payload).toEqual(large);
  });

  it('refuses a debounce key the job has no debounce for, a debounce out of range, and a key twice in a batch', async () => {
    await ops.team.put('/v1/jobs/ops.plain', { queue: 'ops' });
    const noDebounce = await enqueue({ debounceKey: 'k' }, app, 'ops.plain');
    expect(noDebounce.contentType).toMatch(/^application\/problem\+json/);
    expect([noDebounce.status, noDebounce.body.type, noDebounce.body.field]).toEqual([
      400,
      '/problems/validation-error',
      'debounceKey',
    ]);
    // The body's schema refuses these, its detail naming the field.
    for (const [seconds, detail] of [
      [0, 'debounce.seconds must not be less than 1'],
      [86_401, 'debounce.seconds must not be greater than 86400'],
    ] as const) {
      const bad = await ops.team.put<{ type: string; detail: string }>('/v1/jobs/ops.bad', {
        queue: 'ops',
        debounce: { seconds },
      });
      expect([bad.status, bad.body.type, bad.body.detail]).toEqual([400, '/problems/validation-error', detail]);
    }
    const twice = await ops.team.post<{ type: string; field: string }>('/v1/runs:batch', {
      runs: [
        { job: 'ops.reindex', debounceKey: 'same' },
        { job: 'ops.reindex', debounceKey: 'same' },
      ],
    });
    expect([twice.status, twice.body.type, twice.body.field]).toEqual([
      400,
      '/problems/validation-error',
      'runs[1].debounceKey',
    ]);
    const badKey = await ops.team.post<{ type: string; detail: string }>('/v1/jobs/ops.reindex/runs', {
      debounceKey: 'has space',
    });
    expect([badKey.status, badKey.body.type, badKey.body.detail]).toEqual([
      400,
      '/problems/validation-error',
      'debounceKey must be 1-200 visible ASCII characters',
    ]);
    expect(await waitingWithKey('same')).toEqual([]);
  });

  it('GraphQL: enqueueRun with a debounceKey moves the waiting run; the job shows its debounce', async () => {
    const gql = graphqlClient(app.url, ops.teamToken);
    const mutation = `mutation ($payload: JSON) {
      enqueueRun(job: "ops.reindex", debounceKey: "gql-1", payload: $payload) { id debounceKey availableAt payload } }`;
    type Answer = { enqueueRun: { id: string; debounceKey: string; availableAt: string; payload: unknown } };
    const first = await gql<Answer>(mutation, { payload: 1 });
    const again = await gql<Answer>(mutation, { payload: 2 });
    expect(again.data?.enqueueRun).toMatchObject({ id: first.data?.enqueueRun.id, debounceKey: 'gql-1', payload: 2 });
    const job = await gql<{ job: { debounceSeconds: number } }>('{ job(name: "ops.reindex") { debounceSeconds } }');
    expect(job.data?.job.debounceSeconds).toBe(1);
  });

  it('keeps a key in the row of a run only while it may be moved, as a rebuild from the log writes it', async () => {
    expect((await enqueue({ debounceKey: 'doc-5' })).status).toBe(201);
    const { rows } = await db.pool.query<{ state: string; attempt: number; kept: boolean }>(
      `SELECT r.state, r.attempt, r.debounce_key IS NOT NULL AS kept
         FROM runs r JOIN run_listing l USING (run_id, kept_on) WHERE l.definition ? 'debounceKey'`,
    );
    for (const { state, attempt, kept } of rows)
      expect({ state, attempt, kept }).toEqual({ state, attempt, kept: state === 'scheduled' && attempt === 0 });
    expect(rows.filter((r) => r.kept).length).toBeGreaterThan(1);
    expect(rows.filter((r) => !r.kept).length).toBeGreaterThan(1);
    const verified = await verifyProjections(db.eventStore, db.pool, PROJECTIONS);
    expect(verified.differences).toEqual([]);
  });
});
