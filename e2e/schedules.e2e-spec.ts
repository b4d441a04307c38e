import { ApiModule } from '@chronicle/api';
import { waitFor, createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { SchedulerModule } from '@chronicle/scheduler';
import type { Clock } from '@chronicle/platform';
import { apiClient, type ApiClient } from './support/api-client';
import { createTeam } from './support/team-tokens';
import { startApp, type RunningApp } from './support/start-app';

const ADMIN_TOKEN = 'e2e-admin-token-schedules-0123456789';

interface Shard {
  owner: string | null;
  lastMaterialisedAt: string | null;
}

interface Scheduled {
  runId: string;
  source: string;
  dueAt: string;
  idempotencyKey: string;
}

describe('the materialiser', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let scheduler: RunningApp;
  let admin: ApiClient;
  let team: ApiClient;
  let worker: ApiClient;
  /** The scheduler's clock: the system's, unless a test stops it at a time of its own (until the test ends). */
  let stoppedAt: Date | undefined;
  const clock: Clock = { now: () => stoppedAt ?? new Date() };

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    admin = apiClient(app.url, ADMIN_TOKEN);
    scheduler = await startScheduler();
    ({ team, worker } = await createTeam(app.url, ADMIN_TOKEN, 'cron', ['cron']));
  });
  afterEach(() => {
    stoppedAt = undefined;
  });
  afterAll(async () => {
    await scheduler?.close();
    await app?.close();
    await db?.drop();
  });

  const startScheduler = (schedulerClock: Clock = clock): Promise<RunningApp> =>
    startApp(db.pool, db.eventStore, [SchedulerModule], undefined, schedulerClock);
  /** When the materialiser last finished a pass over every shard (GET /v1/admin/shards); -1: not yet over all. */
  const lastMaterialised = async (): Promise<number> => {
    const { body } = await admin.get<{ shards: Shard[] }>('/v1/admin/shards');
    return Math.min(
      ...body.shards.map((s) =>
        s.owner === null || s.lastMaterialisedAt === null ? -1 : Date.parse(s.lastMaterialisedAt),
      ),
    );
  };
  /**
   * Resolves once the materialiser has made `count` whole passes over every shard, all begun after this call:
   * the pass under way may have begun before, the one after it did not (one pass at a time).
   */
  const materialiserPasses = async (count: number): Promise<void> => {
    for (let ends = 0; ends <= count; ends++) {
      const before = await lastMaterialised();
      await waitFor(async () => (await lastMaterialised()) > before, {
        timeoutMs: 10_000,
        description: 'the end of a pass of the materialiser over every shard',
      });
    }
  };
  const scheduledRuns = async (job: string): Promise<Scheduled[]> =>
    (
      await db.log.query<Scheduled>(
        `SELECT data->>'runId' AS "runId", data->>'source' AS source, data->>'dueAt' AS "dueAt", data->>'idempotencyKey' AS "idempotencyKey"
           FROM events WHERE event_type = 'RunScheduled' AND data->>'job' = $1 ORDER BY data->>'dueAt'`,
        [job],
      )
    ).rows;
  /** allow_all: the catch-up runs of these tests may run side by side (the overlap policies have their own tests). */
  const defineEveryMinute = (name: string, missedRunPolicy: string): Promise<unknown> =>
    team.put(`/v1/jobs/${name}`, {
      queue: 'cron',
      schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 0, missedRunPolicy, overlapPolicy: 'allow_all' },
    });

  it('materialises the next fire time ahead of time, once, with the nominal time in the idempotency key', async () => {
    await defineEveryMinute('cron.minutely', 'run_once');
    await waitFor(async () => (await scheduledRuns('cron.minutely')).length >= 1, 10_000);
    const [run] = await scheduledRuns('cron.minutely');
    const due = new Date(run!.dueAt);
    expect(due.getUTCSeconds()).toBe(0);
    expect(due.getTime() - Date.now()).toBeLessThanOrEqual(60_000);
    expect(run).toMatchObject({
      source: 'schedule',
      idempotencyKey: `cron.minutely@${due.toISOString().slice(0, 19)}+00:00`,
    });
    // With the log in a database of its own, the run's row is written just after its event.
    await waitFor(async () => (await team.get(`/v1/runs/${run!.runId}`)).status === 200, {
      timeoutMs: 5_000,
      description: 'the scheduled run to be readable',
    });
    expect((await team.get(`/v1/runs/${run!.runId}`)).body).toMatchObject({
      job: 'cron.minutely',
      dueAt: due.toISOString(),
    });
    // More passes, no second run for the same fire time.
    await materialiserPasses(2);
    const runs = await scheduledRuns('cron.minutely');
    expect(new Set(runs.map((r) => r.dueAt)).size).toBe(runs.length);
  });

  it('applies each missed-run policy when the scheduler restarts after 3 minutes down, and workers lease the catch-up runs', async () => {
    const thisMinute = Math.floor(Date.now() / 60_000) * 60_000;
    await scheduler.close();
    for (const policy of ['run_once', 'run_all', 'skip']) await defineEveryMinute(`cron.missed-${policy}`, policy);
    // The scheduler's last pass, 4 minutes ago less a second: its 60 s lookahead covered the first of those
    // minutes, then it stopped.
    const lastPass = new Date(thisMinute - 4 * 60_000 + 1000);
    const past = await startScheduler({ now: () => lastPass });
    const cursorsAt = async (): Promise<string[]> =>
      (
        await db.pool.query<{ at: Date }>(
          "SELECT materialised_through AS at FROM schedule_cursors WHERE job LIKE 'cron.missed-%' ORDER BY job",
        )
      ).rows.map((r) => r.at?.toISOString() ?? 'never');
    const cursor = new Date(lastPass.getTime() + 60_000).toISOString();
    await waitFor(async () => (await cursorsAt()).every((at) => at === cursor), 10_000);
    await past.close();
    for (const policy of ['run_once', 'run_all', 'skip'])
      expect((await scheduledRuns(`cron.missed-${policy}`)).map((r) => [r.dueAt, r.source])).toEqual([
        [new Date(thisMinute - 3 * 60_000).toISOString(), 'schedule'],
      ]);

    // Back up, its clock stopped half way through this minute (whenever the test runs, the minutes below are
    // the same): the fire times of the last 2 minutes and of this one were missed.
    stoppedAt = new Date(thisMinute + 30_000);
    scheduler = await startScheduler();
    const catchUps = async (policy: string): Promise<string[]> =>
      (await scheduledRuns(`cron.missed-${policy}`)).filter((r) => r.source === 'catch_up').map((r) => r.dueAt);
    const missed = [2, 1, 0].map((m) => new Date(thisMinute - m * 60_000).toISOString());
    await waitFor(
      async () => (await catchUps('run_all')).length === 3 && (await catchUps('run_once')).length === 1,
      10_000,
    );
    // A pass more adds none.
    await materialiserPasses(1);
    expect(await catchUps('run_all')).toEqual(missed);
    expect(await catchUps('run_once')).toEqual(missed.slice(-1));
    expect(await catchUps('skip')).toEqual([]);
    // Every policy goes on with the fire times ahead, each once.
    for (const policy of ['run_once', 'run_all', 'skip']) {
      const dueTimes = (await scheduledRuns(`cron.missed-${policy}`)).map((r) => r.dueAt);
      expect(new Set(dueTimes).size).toBe(dueTimes.length);
      expect(dueTimes).toContain(new Date(thisMinute + 60_000).toISOString());
    }

    const { body } = await worker.post<{ leases: Array<{ runId: string }> }>('/v1/lease', {
      queues: ['cron'],
      max: 100,
    });
    const leased = new Set(body.leases.map((l) => l.runId));
    const caughtUp = (await scheduledRuns('cron.missed-run_all'))
      .concat(await scheduledRuns('cron.missed-run_once'))
      .filter((r) => r.source === 'catch_up');
    for (const run of caughtUp) expect(leased).toContain(run.runId);
  }, 40_000);

  it('backfills every fire time of a past range once, even when asked twice', async () => {
    await team.put('/v1/jobs/cron.daily', {
      queue: 'cron',
      schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin', jitterSeconds: 0 },
    });
    const range = { from: '2026-03-27T00:00:00Z', to: '2026-03-30T12:00:00Z' };
    const first = await team.post<{
      runs: Array<{ runId: string; dueAt: string; idempotencyKey: string; created: boolean }>;
    }>('/v1/jobs/cron.daily:backfill', range);
    expect(first.status).toBe(200);
    // The spring-forward night (29 March) has no 02:00: it fires at 03:00 CEST.
    expect(first.body.runs.map((r) => [r.dueAt, r.idempotencyKey, r.created])).toEqual([
      ['2026-03-27T01:00:00.000Z', 'cron.daily@2026-03-27T02:00:00+01:00', true],
      ['2026-03-28T01:00:00.000Z', 'cron.daily@2026-03-28T02:00:00+01:00', true],
      ['2026-03-29T01:00:00.000Z', 'cron.daily@2026-03-29T03:00:00+02:00', true],
      ['2026-03-30T00:00:00.000Z', 'cron.daily@2026-03-30T02:00:00+02:00', true],
    ]);
    const second = await team.post<{ runs: Array<{ runId: string; created: boolean }> }>(
      '/v1/jobs/cron.daily:backfill',
      range,
    );
    expect(second.body.runs.map((r) => r.created)).toEqual([false, false, false, false]);
    expect(second.body.runs.map((r) => r.runId)).toEqual(first.body.runs.map((r) => r.runId));
    expect((await scheduledRuns('cron.daily')).filter((r) => r.source === 'backfill')).toHaveLength(4);
    expect(
      (await team.post('/v1/jobs/cron.daily:backfill', { from: '2026-03-27T00:00:00Z', to: '2999-01-01T00:00:00Z' }))
        .body,
    ).toMatchObject({ status: 400, type: '/problems/invalid-schedule' });
    // Over the cap: four years of daily runs.
    const overCap = await team.post('/v1/jobs/cron.daily:backfill', {
      from: '2022-01-01T00:00:00Z',
      to: '2026-01-01T00:00:00Z',
    });
    expect(overCap.body).toMatchObject({
      status: 400,
      type: '/problems/invalid-schedule',
      detail: expect.stringContaining('1000'),
    });
  });

  it('stops materialising a paused job', async () => {
    // Beside it, the same schedule unpaused: what the passes below would have done for the paused one.
    await defineEveryMinute('cron.paused', 'run_once');
    await defineEveryMinute('cron.unpaused', 'run_once');
    await waitFor(
      async () =>
        (await scheduledRuns('cron.paused')).length >= 1 && (await scheduledRuns('cron.unpaused')).length >= 1,
      10_000,
    );
    await team.post('/v1/jobs/cron.paused:pause');
    const cursor = async (job: string): Promise<unknown[]> =>
      (await db.pool.query('SELECT materialised_through FROM schedule_cursors WHERE job = $1', [job])).rows;
    const before = await cursor('cron.paused');
    const runsBefore = await scheduledRuns('cron.paused');
    const unpausedBefore = await cursor('cron.unpaused');
    // Two minutes on, the next pass materialises the new fire times of the unpaused job, and none of the paused one.
    stoppedAt = new Date(Date.now() + 2 * 60_000);
    await materialiserPasses(1);
    expect(await cursor('cron.unpaused')).not.toEqual(unpausedBefore);
    expect(await cursor('cron.paused')).toEqual(before);
    expect(await scheduledRuns('cron.paused')).toEqual(runsBefore);
  });

  it('applies the missed-run policy when a paused job resumes', async () => {
    await defineEveryMinute('cron.resumed', 'run_all');
    await waitFor(
      async () => (await db.pool.query("SELECT 1 FROM schedule_cursors WHERE job = 'cron.resumed'")).rows.length === 1,
      10_000,
    );
    // The scheduler's clock stands half a minute before the minute the job was defined in, and the job is
    // as if it had stayed paused for the 3 minutes before that: its missed fires are the 3 minutes before
    // its definition, of which no run can exist, in whatever minute the test runs (the real clock, passing
    // a minute meanwhile, would have the fires already materialised counted as missed).
    const definedIn = Math.floor(Date.now() / 60_000) * 60_000;
    stoppedAt = new Date(definedIn - 30_000);
    await team.post('/v1/jobs/cron.resumed:pause');
    await db.pool.query("UPDATE schedule_cursors SET materialised_through = $1 WHERE job = 'cron.resumed'", [
      new Date(definedIn - 4 * 60_000 + 1_000),
    ]);
    await materialiserPasses(1);
    expect((await scheduledRuns('cron.resumed')).filter((r) => r.source === 'catch_up')).toHaveLength(0);
    await team.post('/v1/jobs/cron.resumed:resume');
    await waitFor(
      async () => (await scheduledRuns('cron.resumed')).filter((r) => r.source === 'catch_up').length === 3,
      { timeoutMs: 10_000, description: 'the three missed fires as catch-up runs' },
    );
    const caughtUp = (await scheduledRuns('cron.resumed')).filter((r) => r.source === 'catch_up');
    expect(caughtUp.map((r) => Date.parse(r.dueAt) - definedIn)).toEqual([-180_000, -120_000, -60_000]);
  });
});
