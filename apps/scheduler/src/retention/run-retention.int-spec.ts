import { newRunScheduled, isRetiredRun } from '@chronicle/commands';
import { createDatedPartition } from '@chronicle/platform';
import {
  ABSENT,
  decide,
  evolve,
  runStreamId,
  type PresentRun,
  type RunCommand,
  type RunSnapshot,
} from '@chronicle/domain';
import { auditProjection, updateRuns, upsertRuns } from '@chronicle/projections';
import { createTestDatabase, testJob, waitFor, type TestDatabase } from '@chronicle/testing';
import { PostgresEventStore, type RecordedEvent } from '@chronicle/event-store';
import { payloadsReferenced, RunRetention } from './run-retention';

const DAY = 86_400_000;
/** A week of the log before the first day kept as of TODAY (2026-11-02): the Monday five weeks before that. */
const LOG_WEEK = '2026-10-26';
const TODAY = new Date('2026-12-02T12:00:00Z');
const daysAgo = (days: number): Date => new Date(TODAY.getTime() - days * DAY);
const job = testJob({ name: 'ops.retained', retry: { maxAttempts: 1, baseSeconds: 1, maxSeconds: 1 } });

/** A run due `dueDaysAgo` days ago taken through `steps` (each at its own time), as the decider folds it. */
function run(runId: string, dueDaysAgo: number, ...steps: Array<(now: Date) => RunCommand>): PresentRun {
  const due = daysAgo(dueDaysAgo);
  let state: RunSnapshot = evolve(ABSENT, {
    type: 'RunScheduled',
    data: newRunScheduled(job, 1, { runId, dueAt: due, idempotencyKey: runId, source: 'api' }),
  });
  steps.forEach((step, i) => {
    for (const event of decide(step(new Date(due.getTime() + (i + 1) * 60_000)), state)) state = evolve(state, event);
  });
  return state as PresentRun;
}
const lease = (now: Date): RunCommand => ({ type: 'LeaseRun', workerId: 'w', leaseSeconds: 600, now });
const succeed = (now: Date): RunCommand => ({
  type: 'CompleteRun',
  fencingToken: 1,
  outcome: 'success',
  error: null,
  retryable: false,
  now,
  draw: 0,
});
const fail = (now: Date): RunCommand =>
  ({ ...(succeed(now) as object), outcome: 'failure', error: 'boom' }) as RunCommand;
const cancel = (now: Date): RunCommand => ({ type: 'CancelRun', now });
const discard = (now: Date): RunCommand => ({ type: 'DiscardRun', now });

describe('run retention (partitions by the day a run is due)', () => {
  let db: TestDatabase;
  let eventStore: PostgresEventStore;
  const present = async (): Promise<string[]> =>
    (await db.pool.query<{ run_id: string }>('SELECT run_id FROM runs ORDER BY run_id')).rows.map((r) => r.run_id);
  const listed = async (): Promise<string[]> =>
    (await db.pool.query<{ run_id: string }>('SELECT run_id FROM run_listing ORDER BY run_id')).rows.map(
      (r) => r.run_id,
    );
  const partitionOf = async (runId: string): Promise<string[]> =>
    (
      await db.pool.query<{ runs: string; listing: string }>(
        `SELECT (SELECT tableoid::regclass::text FROM runs WHERE run_id = $1) AS runs,
                (SELECT tableoid::regclass::text FROM run_listing WHERE run_id = $1) AS listing`,
        [runId],
      )
    ).rows.flatMap((r) => [r.runs, r.listing]);

  beforeAll(async () => {
    db = await createTestDatabase();
    eventStore = new PostgresEventStore(db.pool);
    await upsertRuns(db.pool, [
      run('run_old_succeeded', 40, lease, succeed),
      run('run_recent_cancelled', 10, cancel),
      run('run_old_dead', 40, lease, fail),
      run('run_old_waiting', 40),
      run('run_old_discarded', 38, lease, fail, discard),
      run('run_old_leased', 40, lease),
    ]);
    await db.pool.query(
      `INSERT INTO run_payloads (sha256, body, bytes, stored_at) VALUES ('unused', '{}', 2, $1), ('fresh', '{}', 2, now())`,
      [daysAgo(40)],
    );
    // Their streams, and one of a run the read models do not know of yet, in the log's week of 40 days ago.
    const logged = ['run_old_succeeded', 'run_old_discarded', 'run_old_dead', 'run_not_projected'];
    for (const runId of logged)
      await eventStore.appendToStream(runStreamId(runId), 'no_stream', [{ type: 'RunScheduled', data: { runId } }]);
    await createDatedPartition(
      db.pool,
      { table: 'events', column: 'kept_on', prefix: 'events_w', defaultPartition: 'events_unsorted' },
      LOG_WEEK,
      false,
    );
    await db.pool.query('UPDATE events SET kept_on = $1 WHERE es_stream_name(stream_key) = ANY($2::text[])', [
      LOG_WEEK,
      logged.map(runStreamId),
    ]);
    // A job's event of the same time, which the audit index keeps for ever.
    await eventStore.appendToStream('job-ops.retained', 'no_stream', [{ type: 'JobDefined', data: { team: 'ops' } }]);
    // The global log shows an event once no older transaction of the server is in flight: under load, a while.
    let everyEvent: readonly RecordedEvent[] = [];
    await waitFor(async () => (everyEvent = await eventStore.readAll()).length === logged.length + 1, {
      description: 'the events in the global log',
    });
    await auditProjection.apply(db.pool, everyEvent);
  });
  afterAll(() => db.drop());

  it("writes each run in its due day's partition, the default one while its day has none", async () => {
    for (const runId of ['run_old_waiting', 'run_old_dead', 'run_recent_cancelled'])
      expect(await partitionOf(runId)).toEqual(['runs_unsorted', 'run_listing_unsorted']);
  });

  it('drops what finished before RETENTION_DAYS, never a run that can still change, and creates the days ahead', async () => {
    const report = await new RunRetention(db.pool, eventStore, 30, () => TODAY).retainOnce();
    expect(report).toMatchObject({ keptSince: '2026-11-02', retiredRuns: 2, keptRuns: 3, deletedPayloads: 1 });
    // The cancelled run's day, out of the default partition; yesterday to a week ahead (the migration may have made some).
    expect(report!.createdDays).toContain('2026-11-22');
    for (let day = 1; day <= 9; day++) {
      const { rows } = await db.pool.query<{ runs: string | null; listing: string | null }>(
        'SELECT to_regclass($1) AS runs, to_regclass($2) AS listing',
        [`runs_d202612${String(day).padStart(2, '0')}`, `run_listing_d202612${String(day).padStart(2, '0')}`],
      );
      expect(rows[0]).toEqual({ runs: expect.any(String), listing: expect.any(String) });
    }
    const kept = ['run_old_dead', 'run_old_leased', 'run_old_waiting', 'run_recent_cancelled'];
    expect(await present()).toEqual(kept);
    expect(await listed()).toEqual(kept);
    expect(await partitionOf('run_recent_cancelled')).toEqual(['runs_d20261122', 'run_listing_d20261122']);
    // Due before the first day kept, and not over: kept past their day, with their listing rows.
    for (const runId of ['run_old_dead', 'run_old_leased', 'run_old_waiting'])
      expect(await partitionOf(runId)).toEqual(['runs_kept', 'run_listing_kept']);
    expect(await isRetiredRun(db.pool, 'run_old_succeeded')).toBe(true);
    expect(await isRetiredRun(db.pool, 'run_old_discarded')).toBe(true);
    expect(await isRetiredRun(db.pool, 'run_recent_cancelled')).toBe(false);
    expect(await isRetiredRun(db.pool, 'run_never_was')).toBe(false);
    const payloads = await db.pool.query<{ sha256: string }>('SELECT sha256 FROM run_payloads');
    expect(payloads.rows.map((r) => r.sha256)).toEqual(['fresh']);
    // The log: the streams of the runs dropped go with their week; the others move on, whole.
    expect(report!.log).toEqual({ expiredStreams: 2, keptStreams: 2, droppedWeeks: [LOG_WEEK] });
    const types = async (runId: string): Promise<string[]> =>
      (await eventStore.readStream(runStreamId(runId))).map((e) => e.type);
    expect(await types('run_old_succeeded')).toEqual([]);
    expect(await types('run_old_discarded')).toEqual([]);
    expect(await types('run_old_dead')).toEqual(['RunScheduled']);
    expect(await types('run_not_projected')).toEqual(['RunScheduled']);
    // The audit trail of runs is the log: what the log keeps it shows; the index of the rest keeps the job's.
    const audited = await eventStore.findEvents({ streamPrefix: runStreamId(''), maxCount: 10 });
    expect(audited.map((e) => e.streamId).sort()).toEqual([
      runStreamId('run_not_projected'),
      runStreamId('run_old_dead'),
    ]);
    const indexed = await db.pool.query<{ stream_id: string }>('SELECT stream_id FROM audit_events ORDER BY stream_id');
    expect(indexed.rows).toEqual([{ stream_id: 'job-ops.retained' }]);
  });

  it('finishes a run where its row is, moving nothing; old history is not written again', async () => {
    const leased = run('run_old_leased', 40, lease);
    const finishedNow: PresentRun = { ...leased, ...{ status: 'succeeded', lease: null, revision: 2 } };
    await updateRuns(db.pool, [{ ...finishedNow, finishedAt: '2026-12-02T12:30:00.000Z' }]);
    expect(await partitionOf('run_old_leased')).toEqual(['runs_kept', 'run_listing_kept']);
    // A projection folding the log again (a rebuild, a lagging projector) skips what retention dropped.
    await upsertRuns(db.pool, [run('run_old_succeeded', 40, lease, succeed)]);
    expect(await present()).not.toContain('run_old_succeeded');
  });

  it('drops a whole day when its time comes, by its partitions, and retires its runs', async () => {
    const report = await new RunRetention(
      db.pool,
      eventStore,
      30,
      () => new Date(TODAY.getTime() + 25 * DAY),
    ).retainOnce();
    expect(report).toMatchObject({ keptSince: '2026-11-27', droppedDays: ['2026-11-22'], retiredRuns: 1 });
    expect(await present()).toEqual(['run_old_dead', 'run_old_leased', 'run_old_waiting']);
    expect(await listed()).toEqual(['run_old_dead', 'run_old_leased', 'run_old_waiting']);
    expect(await isRetiredRun(db.pool, 'run_recent_cancelled')).toBe(true);
    const tables = await db.pool.query<{ name: string }>(
      "SELECT relname AS name FROM pg_class WHERE relname LIKE 'run%_d20261122'",
    );
    expect(tables.rows).toEqual([]);
  });

  it('retires a kept run once it finished before the first day kept, and keeps those that can still change', async () => {
    const report = await new RunRetention(
      db.pool,
      eventStore,
      30,
      () => new Date(TODAY.getTime() + 40 * DAY),
    ).retainOnce();
    expect(report).toMatchObject({ keptSince: '2026-12-12', retiredRuns: 1 });
    expect(await present()).toEqual(['run_old_dead', 'run_old_waiting']);
    expect(await listed()).toEqual(['run_old_dead', 'run_old_waiting']);
    expect(await isRetiredRun(db.pool, 'run_old_leased')).toBe(true);
  });
});

describe('run retention of large payloads, with runs on another server too', () => {
  let control: TestDatabase;
  let other: TestDatabase;
  const payloads = async (): Promise<string[]> =>
    (await control.pool.query<{ sha256: string }>('SELECT sha256 FROM run_payloads ORDER BY sha256')).rows.map(
      (r) => r.sha256,
    );
  const retain = (elsewhere: (sha256s: readonly string[]) => Promise<ReadonlySet<string>>) =>
    new RunRetention(control.pool, new PostgresEventStore(control.pool), 30, () => TODAY, elsewhere).retainOnce();

  beforeAll(async () => {
    [control, other] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    // Stored 40 days ago, both; a run of the other server refers to the first.
    await control.pool.query(
      `INSERT INTO run_payloads (sha256, body, bytes, stored_at) VALUES ('theirs', '{}', 2, $1), ('nobodys', '{}', 2, $1)`,
      [daysAgo(40)],
    );
    const referring = run('run_elsewhere', 1);
    await upsertRuns(other.pool, [
      { ...referring, definition: { ...referring.definition, payloadRef: { sha256: 'theirs', bytes: 2 } } },
    ]);
  });
  afterAll(() => Promise.all([control?.drop(), other?.drop()]));

  it("keeps every payload while a server cannot say which its runs refer to, then those another server's runs do", async () => {
    expect(await retain(() => Promise.reject(new Error('server down')))).toMatchObject({ deletedPayloads: 0 });
    expect(await payloads()).toEqual(['nobodys', 'theirs']);
    expect(await retain((sha256s) => payloadsReferenced(other.pool, sha256s))).toMatchObject({ deletedPayloads: 1 });
    expect(await payloads()).toEqual(['theirs']);
  });
});
