import { createHash } from 'node:crypto';
import { ApiModule } from '@chronicle/api';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { SchedulerClient, Worker } from '@chronicle/worker-sdk';
import { createTeam, graphqlClient, QUIET_WORKER_LOGGER, startApp, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-large-payloads-01234';

interface Lease {
  runId: string;
  fencingToken: number;
  payload: unknown;
}

/** A payload of about `bytes` bytes of JSON. */
function payloadOf(bytes: number, tag: string): Record<string, unknown> {
  return { tag, rows: Array.from({ length: Math.ceil(bytes / 50) }, (_, i) => ({ i, note: 'n'.repeat(30) })) };
}

/**
 * Payloads over 4 KB stored once, outside the event and the hot row (docs/api.md, "Payloads"); workers
 * see no difference.
 */
describe('large payloads by reference', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let ops: TeamClients;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    ops = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
    expect((await ops.team.put('/v1/jobs/ops.import', { queue: 'ops' })).status).toBe(201);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const enqueue = async (job: string, body: Record<string, unknown>): Promise<string> => {
    const answer = await ops.team.post<{ runId: string }>(`/v1/jobs/${job}/runs`, body);
    expect(answer.status).toBe(201);
    return answer.body.runId;
  };
  const scheduledData = async (runId: string): Promise<Record<string, unknown>> =>
    (
      await db.log.query<{ data: Record<string, unknown> }>(
        `SELECT data FROM events WHERE stream_key = es_stream_key($1) AND event_type = 'RunScheduled'`,
        [`run-${runId}`],
      )
    ).rows[0]!.data;
  const rowBytes = async (runId: string): Promise<number> =>
    (
      await db.pool.query<{ n: number }>('SELECT pg_column_size(definition) AS n FROM run_listing WHERE run_id = $1', [
        runId,
      ])
    ).rows[0]!.n;
  const storedPayloads = async (): Promise<Array<{ sha256: string; bytes: number }>> =>
    (await db.pool.query<{ sha256: string; bytes: number }>('SELECT sha256, bytes FROM run_payloads ORDER BY sha256'))
      .rows;
  const leaseAll = async (): Promise<Lease[]> => {
    const answer = await ops.worker.post<{ leases: Lease[] }>('/v1/lease', { queues: ['ops'], max: 100 });
    expect(answer.status).toBe(200);
    return answer.body.leases;
  };

  it('keeps a payload over 4 KB out of the event and the row, as a reference and a hash, and leases it inline', async () => {
    const large = payloadOf(20_000, 'large');
    const small = payloadOf(1_000, 'small');
    const [largeRun, smallRun] = [
      await enqueue('ops.import', { payload: large }),
      await enqueue('ops.import', { payload: small }),
    ];

    const json = JSON.stringify(large);
    const sha256 = createHash('sha256').update(json).digest('hex');
    const event = await scheduledData(largeRun);
    expect(event['payload']).toBeNull();
    expect(event['payloadRef']).toEqual({ sha256, bytes: Buffer.byteLength(json) });
    expect(JSON.stringify(event).length).toBeLessThan(1_000);
    expect(await rowBytes(largeRun)).toBeLessThan(1_000);
    expect(await storedPayloads()).toEqual([{ sha256, bytes: Buffer.byteLength(json) }]);
    // A small one stays where it was.
    expect((await scheduledData(smallRun))['payload']).toEqual(small);
    expect((await scheduledData(smallRun))['payloadRef']).toBeUndefined();

    const leases = await leaseAll();
    expect(Object.fromEntries(leases.map((l) => [l.runId, l.payload]))).toEqual({
      [largeRun]: large,
      [smallRun]: small,
    });
    for (const lease of leases)
      expect(
        (
          await ops.worker.post(`/v1/runs/${lease.runId}/complete`, {
            fencingToken: lease.fencingToken,
            outcome: 'success',
          })
        ).status,
      ).toBe(200);
  });

  it('stores a payload once however many runs carry it, a job default included, and measures it in bytes', async () => {
    // 2,100 two-byte characters: under 4,096 characters of JSON, over 4,096 bytes.
    const accented = { text: 'é'.repeat(2_100) };
    const before = (await storedPayloads()).length;
    const batch = await ops.team.post<{ runs: Array<{ runId: string }> }>('/v1/runs:batch', {
      runs: [1, 2, 3].map(() => ({ job: 'ops.import', payload: accented })),
    });
    expect(batch.status).toBe(200);
    const refs = await Promise.all(batch.body.runs.map(async (r) => (await scheduledData(r.runId))['payloadRef']));
    expect(new Set(refs.map((r) => JSON.stringify(r))).size).toBe(1);

    const fallback = payloadOf(8_000, 'default');
    expect((await ops.team.put('/v1/jobs/ops.defaulted', { queue: 'ops', payload: fallback })).status).toBe(201);
    const [first, second] = [await enqueue('ops.defaulted', {}), await enqueue('ops.defaulted', {})];
    expect((await scheduledData(first))['payloadRef']).toEqual((await scheduledData(second))['payloadRef']);
    expect((await storedPayloads()).length).toBe(before + 2);

    const leases = await leaseAll();
    expect(leases.filter((l) => l.runId === first || l.runId === second).map((l) => l.payload)).toEqual([
      fallback,
      fallback,
    ]);
    expect(leases.filter((l) => batch.body.runs.some((r) => r.runId === l.runId)).map((l) => l.payload)).toEqual([
      accented,
      accented,
      accented,
    ]);
    for (const lease of leases)
      await ops.worker.post(`/v1/runs/${lease.runId}/complete`, {
        fencingToken: lease.fencingToken,
        outcome: 'success',
      });
  });

  it('hands the SDK handler the payload as it was given, leased through completions too', async () => {
    const payloads = [payloadOf(12_000, 'a'), payloadOf(30_000, 'b'), payloadOf(5_000, 'c'), { tag: 'd' }];
    const runIds = await Promise.all(payloads.map((payload) => enqueue('ops.import', { payload })));
    const seen = new Map<string, unknown>();
    const worker = new Worker({
      client: new SchedulerClient({ baseUrl: app.url, token: ops.workerToken }),
      queues: ['ops'],
      concurrency: 1,
      waitSeconds: 1,
      logger: QUIET_WORKER_LOGGER,
      handler: async (run) => {
        seen.set(run.runId, run.payload);
      },
    });
    const running = worker.run();
    await waitFor(() => runIds.every((id) => seen.has(id)), 15_000);
    await worker.shutdown({ graceMs: 1000 });
    await running;
    expect(runIds.map((id) => seen.get(id))).toEqual(payloads);
  });

  it('answers GraphQL Run.payload from the store', async () => {
    const large = payloadOf(9_000, 'graphql');
    const runId = await enqueue('ops.import', { payload: large });
    const answer = await graphqlClient(app.url, ops.teamToken)<{ run: { payload: unknown } }>(
      'query ($id: ID!) { run(id: $id) { payload } }',
      { id: runId },
    );
    expect(answer.errors).toBeUndefined();
    expect(answer.data?.run.payload).toEqual(large);
  });

  it('still refuses a payload over 256 KB with 413, storing nothing', async () => {
    const before = (await storedPayloads()).length;
    const answer = await ops.team.post<{ type: string }>('/v1/jobs/ops.import/runs', {
      payload: payloadOf(270_000, 'huge'),
    });
    expect([answer.status, answer.body.type]).toEqual([413, '/problems/payload-too-large']);
    expect((await storedPayloads()).length).toBe(before);
  });
});
