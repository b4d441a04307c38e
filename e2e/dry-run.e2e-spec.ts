import { ApiModule } from '@chronicle/api';
import { SchedulerModule } from '@chronicle/scheduler';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { SchedulerClient, Worker } from '@chronicle/worker-sdk';
import { createTeam, graphqlClient, QUIET_WORKER_LOGGER, startApp, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-dry-run-0123456789ab';

interface Run {
  runId: string;
  state: string;
  dryRun: boolean;
}

/** A migrated cron tried in dry run, its handler told to log and have no effects (docs/api.md, "Schedules"). */
describe('dry-run jobs', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let scheduler: RunningApp;
  let ops: TeamClients;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    scheduler = await startApp(db.pool, db.eventStore, [SchedulerModule]);
    ops = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
  });
  afterAll(async () => {
    await scheduler?.close();
    await app?.close();
    await db?.drop();
  });

  const lease = async (): Promise<Array<{ runId: string; dryRun: boolean }>> => {
    const answer = await ops.worker.post<{ leases: Array<{ runId: string; dryRun: boolean }> }>('/v1/lease', {
      queues: ['ops'],
      max: 10,
      waitSeconds: 0,
    });
    expect(answer.status).toBe(200);
    return answer.body.leases;
  };
  const enqueue = async (job: string): Promise<Run> => {
    const answer = await ops.team.post<Run>(`/v1/jobs/${job}/runs`, {});
    expect(answer.status).toBe(201);
    return answer.body;
  };

  it('leases its runs marked dry, says so on the job and the run, and a live job beside it is not', async () => {
    const defined = await ops.team.put<{ dryRun: boolean }>('/v1/jobs/ops.sync', { queue: 'ops', dryRun: true });
    expect([defined.status, defined.body.dryRun]).toEqual([201, true]);
    await ops.team.put('/v1/jobs/ops.live', { queue: 'ops' });
    expect((await ops.team.get<{ dryRun: boolean }>('/v1/jobs/ops.live')).body.dryRun).toBe(false);

    const [dry, live] = [await enqueue('ops.sync'), await enqueue('ops.live')];
    expect([dry.dryRun, live.dryRun]).toEqual([true, false]);
    const leases = await lease();
    expect(Object.fromEntries(leases.map((l) => [l.runId, l.dryRun]))).toEqual({
      [dry.runId]: true,
      [live.runId]: false,
    });
    expect((await ops.team.get<Run>(`/v1/runs/${dry.runId}`)).body).toMatchObject({ state: 'leased', dryRun: true });
    const listed = await ops.team.get<{ items: Run[] }>('/v1/runs?job=ops.sync');
    expect(listed.body.items.map((r) => [r.runId, r.dryRun])).toEqual([[dry.runId, true]]);

    const graphql = await graphqlClient(app.url, ops.teamToken)<{
      run: { dryRun: boolean };
      job: { dryRun: boolean };
    }>(`query ($id: ID!) { run(id: $id) { dryRun } job(name: "ops.sync") { dryRun } }`, { id: dry.runId });
    expect(graphql.data).toEqual({ run: { dryRun: true }, job: { dryRun: true } });
  });

  it('gives the SDK handler context.dryRun', async () => {
    await ops.team.put('/v1/jobs/ops.report', { queue: 'ops', dryRun: true });
    const run = await enqueue('ops.report');
    const seen: Array<{ runId: string; dryRun: boolean }> = [];
    const worker = new Worker({
      client: new SchedulerClient({ baseUrl: app.url, token: ops.workerToken }),
      queues: ['ops'],
      waitSeconds: 1,
      logger: QUIET_WORKER_LOGGER,
      handler: async (leased, context) => {
        seen.push({ runId: leased.runId, dryRun: context.dryRun });
      },
    });
    const running = worker.run();
    await waitFor(async () => (await ops.team.get<Run>(`/v1/runs/${run.runId}`)).body.state === 'succeeded', 15_000);
    await worker.shutdown({ graceMs: 1000 });
    await running;
    expect(seen).toContainEqual({ runId: run.runId, dryRun: true });
  });

  it('materialises a dry cron job as dry runs', async () => {
    await ops.team.put('/v1/jobs/ops.nightly', {
      queue: 'ops',
      dryRun: true,
      schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 0 },
    });
    const scheduled = async (): Promise<Array<{ runId: string; dryRun: boolean | null }>> =>
      (
        await db.log.query<{ runId: string; dryRun: boolean | null }>(
          `SELECT data->>'runId' AS "runId", (data->>'dryRun')::boolean AS "dryRun"
             FROM events WHERE event_type = 'RunScheduled' AND data->>'job' = 'ops.nightly'`,
        )
      ).rows;
    await waitFor(async () => (await scheduled()).length >= 1, 10_000);
    const [first] = await scheduled();
    expect(first!.dryRun).toBe(true);
    await waitFor(async () => (await ops.team.get<Run>(`/v1/runs/${first!.runId}`)).status === 200, 10_000);
    expect((await ops.team.get<Run>(`/v1/runs/${first!.runId}`)).body.dryRun).toBe(true);
  });

  it('switching a job out of dry run is a definition change with its actor; runs made after it are live', async () => {
    await ops.team.put('/v1/jobs/ops.migrate', { queue: 'ops', dryRun: true });
    const before = await enqueue('ops.migrate');
    const switched = await ops.team.put<{ dryRun: boolean; version: number }>('/v1/jobs/ops.migrate', {
      queue: 'ops',
      dryRun: false,
    });
    expect([switched.status, switched.body.dryRun, switched.body.version]).toEqual([200, false, 2]);
    const versions = await ops.team.get<{ versions: Array<{ actor: string; changes: unknown[] }> }>(
      '/v1/jobs/ops.migrate/versions',
    );
    expect(versions.body.versions.at(-1)).toEqual(
      expect.objectContaining({ actor: ops.teamActor, changes: [{ field: 'dryRun', before: true, after: false }] }),
    );
    const after = await enqueue('ops.migrate');
    expect([after.dryRun, (await ops.team.get<Run>(`/v1/runs/${before.runId}`)).body.dryRun]).toEqual([false, true]);
  });

  it('refuses a dryRun that is not a boolean, with a problem naming the field', async () => {
    const bad = await ops.team.put<{ type: string; detail: string }>('/v1/jobs/ops.bad', {
      queue: 'ops',
      dryRun: 'yes',
    });
    expect([bad.status, bad.body.type]).toEqual([400, '/problems/validation-error']);
    expect(bad.body.detail).toContain('dryRun');
  });
});
