import { defineNewJobs, executeStreamCommand } from '@chronicle/commands';
import {
  decideJob,
  evolveJob,
  NO_JOB,
  type JobDefinition,
  type JobEvent,
  type JobSnapshot,
  jobStreamId,
} from '@chronicle/domain';
import { upsertJob } from '@chronicle/projections';
import { PostgresEventStore } from '@chronicle/event-store';
import type { Clock } from '@chronicle/platform';
import { testJob, createTestDatabase, runDecisions, type TestDatabase } from '@chronicle/testing';
import { soleNodeScope, type ShardScope } from '../shards/shard-ownership';
import { MATERIALISE_BATCH_JOBS, Materialiser } from './materialiser';

const hourly = (name: string, cron = '0 * * * *'): JobDefinition =>
  testJob({ name, schedule: { cron, timeZone: 'Europe/Berlin', jitterSeconds: 60 } });

/** 12:59:30 Berlin time, with the 13:00 fire time inside the 60 s lookahead. */
const beforeTheHour = new Date('2026-06-01T10:59:30Z');
const at = (instant: Date): Clock => ({ now: () => instant });

describe('the materialiser over many schedules', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let scope: ShardScope;
  const jobs = Array.from({ length: MATERIALISE_BATCH_JOBS * 2 + 100 }, (_, i) =>
    hourly(`ops.fleet-${String(i).padStart(4, '0')}`),
  );

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
    scope = await soleNodeScope(db.pool);
    await store.unitOfWork(db.pool, (uow) => defineNewJobs(uow, jobs, 'test'));
  });
  afterAll(() => db?.drop());

  const runsPerJob = async (): Promise<Map<string, string[]>> => {
    const { rows } = await db.pool.query<{ job: string; due: string[] }>(
      `SELECT data->>'job' AS job, array_agg(data->>'dueAt' ORDER BY data->>'dueAt') AS due FROM events WHERE event_type = 'RunScheduled' GROUP BY 1`,
    );
    return new Map(rows.map((r) => [r.job, r.due]));
  };

  it('materialises the top of the hour of every job in one pass, each once, spread by jitter over the minute', async () => {
    // Two schedulers at once: they take different batches (SKIP LOCKED) or meet at the same run ids.
    const passes = await Promise.all([
      new Materialiser(runDecisions(store, db.pool), db.pool, at(beforeTheHour)).materialiseOnce(scope),
      new Materialiser(runDecisions(store, db.pool), db.pool, at(beforeTheHour)).materialiseOnce(scope),
    ]);
    expect(passes[0] + passes[1]).toBe(jobs.length);
    const runs = await runsPerJob();
    expect(runs.size).toBe(jobs.length);
    const dueTimes = [...runs.values()].map((due) => {
      expect(due).toHaveLength(1);
      return new Date(due[0]!).getTime();
    });
    const seconds = new Set(dueTimes.map((t) => Math.floor((t - Date.parse('2026-06-01T11:00:00Z')) / 1000)));
    expect(Math.min(...seconds)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...seconds)).toBeLessThan(60);
    // 1,100 jobs over 60 seconds: nearly every second of the minute has runs.
    expect(seconds.size).toBeGreaterThanOrEqual(55);
  });

  it('reads no schedule while none is due, and picks each up again at its next fire time', async () => {
    const touched = async (): Promise<number> =>
      Number(
        (await db.pool.query("SELECT count(*) AS n FROM schedule_cursors WHERE updated_at > now() - interval '1 hour'"))
          .rows[0].n,
      );
    await db.pool.query("UPDATE schedule_cursors SET updated_at = now() - interval '2 hours'");
    const quarterPast = new Date('2026-06-01T11:15:00Z');
    expect(await new Materialiser(runDecisions(store, db.pool), db.pool, at(quarterPast)).materialiseOnce(scope)).toBe(
      0,
    );
    expect(await touched()).toBe(0);
    const beforeNextHour = new Date('2026-06-01T11:59:30Z');
    expect(
      await new Materialiser(runDecisions(store, db.pool), db.pool, at(beforeNextHour)).materialiseOnce(scope),
    ).toBe(jobs.length);
    expect([...(await runsPerJob()).values()].every((due) => due.length === 2)).toBe(true);
  });

  it('looks again at a job whose schedule changed, from its cursor', async () => {
    const changed = hourly('ops.fleet-0000', '30 * * * *');
    await executeStreamCommand<JobSnapshot, JobEvent>(store, db.pool, {
      streamId: jobStreamId(changed.name),
      fold: (events) => events.reduce(evolveJob, NO_JOB),
      revisionOf: (state) => state.revision,
      decide: (state) => decideJob({ type: 'DefineJob', definition: changed }, state),
      project: upsertJob,
      metadata: { actor: 'test', schemaVersion: 1 },
    });
    // 14:29:30 Berlin: the half-past fire time of the new schedule is due; the others wait for 15:00.
    expect(
      await new Materialiser(
        runDecisions(store, db.pool),
        db.pool,
        at(new Date('2026-06-01T12:29:30Z')),
      ).materialiseOnce(scope),
    ).toBe(1);
    const due = (await runsPerJob()).get('ops.fleet-0000')!;
    expect(due.map((d) => d.slice(11, 16))).toEqual(['11:00', '12:00', '12:30']);
  });
});

describe('the materialiser and a large default payload', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it("stores the job's payload once, and its runs' events and rows carry the reference", async () => {
    const store = new PostgresEventStore(db.pool);
    const scope = await soleNodeScope(db.pool);
    const payload = { rows: Array.from({ length: 200 }, (_, i) => ({ i, note: 'x'.repeat(40) })) };
    const minutely = testJob({
      name: 'ops.bulky',
      payload,
      schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 0 },
    });
    await store.unitOfWork(db.pool, (uow) => defineNewJobs(uow, [minutely], 'test'));
    // 12:00:30: the next minute's fire time within the lookahead, then the one after.
    await new Materialiser(runDecisions(store, db.pool), db.pool, at(new Date('2026-06-01T12:00:30Z'))).materialiseOnce(
      scope,
    );
    await new Materialiser(runDecisions(store, db.pool), db.pool, at(new Date('2026-06-01T12:01:30Z'))).materialiseOnce(
      scope,
    );

    const events = await db.pool.query<{ payload: unknown; ref: { sha256: string; bytes: number } }>(
      `SELECT data->'payload' AS payload, data->'payloadRef' AS ref FROM events WHERE event_type = 'RunScheduled'`,
    );
    expect(events.rows).toHaveLength(2);
    expect(events.rows.map((r) => r.payload)).toEqual([null, null]);
    expect(new Set(events.rows.map((r) => r.ref.sha256)).size).toBe(1);
    const stored = await db.pool.query<{ body: unknown }>('SELECT body FROM run_payloads');
    expect(stored.rows).toEqual([{ body: payload }]);
    const rows = await db.pool.query<{ ref: unknown }>(`SELECT definition->'payloadRef' AS ref FROM run_listing`);
    expect(rows.rows.map((r) => r.ref)).toEqual([events.rows[0]!.ref, events.rows[0]!.ref]);
  });
});
