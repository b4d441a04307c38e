import { ApiModule } from '@chronicle/api';
import { RunRetention } from '@chronicle/scheduler';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { createTeam, graphqlClient, startApp, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-retention-0123456789';
const DAY = 86_400_000;

interface Lease {
  runId: string;
  fencingToken: number;
}

/**
 * Runs that finished more than RETENTION_DAYS ago go with their day's partitions; asking for one
 * then answers 410 Gone, not 404, and a run that can still change stays whatever its age. The retention
 * pass is the scheduler's, run here as of 31 days from now.
 */
describe('run retention, as a user sees it', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let ops: TeamClients;
  const runs: Record<'succeeded' | 'dead' | 'waiting', string> = { succeeded: '', dead: '', waiting: '' };

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    ops = await createTeam(app.url, ADMIN_TOKEN, 'ops', ['ops']);
    const defined = await ops.team.put('/v1/jobs/ops.report', {
      queue: 'ops',
      retry: { maxAttempts: 1, baseSeconds: 1, maxSeconds: 1 },
    });
    expect(defined.status).toBe(201);
    const enqueue = async (delaySeconds = 0): Promise<string> => {
      const answer = await ops.team.post<{ runId: string }>('/v1/jobs/ops.report/runs', { delaySeconds });
      expect(answer.status).toBe(201);
      return answer.body.runId;
    };
    runs.succeeded = await enqueue();
    runs.dead = await enqueue();
    runs.waiting = await enqueue(3_600);
    const { body } = await ops.worker.post<{ leases: Lease[] }>('/v1/lease', {
      queues: ['ops'],
      max: 10,
      waitSeconds: 5,
    });
    expect(body.leases.map((l) => l.runId).sort()).toEqual([runs.succeeded, runs.dead].sort());
    const completed = await ops.worker.post('/v1/runs:complete', {
      completions: body.leases.map((lease) => ({
        runId: lease.runId,
        fencingToken: lease.fencingToken,
        outcome: lease.runId === runs.succeeded ? 'success' : 'failure',
        ...(lease.runId === runs.succeeded ? {} : { error: 'upstream down', retryable: false }),
      })),
    });
    expect(completed.status).toBe(200);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('keeps every run while its day is within retention', async () => {
    await new RunRetention(db.pool, db.eventStore, 30).retainOnce();
    expect((await ops.team.get<{ state: string }>(`/v1/runs/${runs.succeeded}`)).body.state).toBe('succeeded');
  });

  it('answers 410 Gone for a run past retention, 404 for one that never was, and keeps the dead and the waiting', async () => {
    const report = await new RunRetention(
      db.pool,
      db.eventStore,
      30,
      () => new Date(Date.now() + 31 * DAY),
    ).retainOnce();
    expect(report!.retiredRuns).toBe(1);

    const gone = await ops.team.get(`/v1/runs/${runs.succeeded}`);
    expect(gone.status).toBe(410);
    expect(gone.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(gone.body).toMatchObject({ type: '/problems/gone', status: 410 });
    const never = await ops.team.get('/v1/runs/run_0123456789abcdef0123456789ab');
    expect([never.status, (never.body as { type: string }).type]).toEqual([404, '/problems/not-found']);

    // Dead and not discarded, and not yet due: never removed by retention, whatever their age.
    expect((await ops.team.get<{ state: string }>(`/v1/runs/${runs.dead}`)).body.state).toBe('dead');
    expect((await ops.team.get<{ state: string }>(`/v1/runs/${runs.waiting}`)).body.state).toBe('scheduled');
    const listed = await ops.team.get<{ items: Array<{ runId: string }> }>('/v1/runs?job=ops.report');
    expect(listed.body.items.map((r) => r.runId).sort()).toEqual([runs.dead, runs.waiting].sort());

    const graphql = await graphqlClient(app.url, ops.teamToken)<{ run: unknown }>(
      `query ($id: ID!) { run(id: $id) { id } }`,
      { id: runs.succeeded },
    );
    expect(graphql.errors?.[0]?.extensions?.code).toBe('gone');
  });
});
