import { addDays, createDatedPartition, datedPartitions } from '@chronicle/platform';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { START, type RecordedEvent } from '../event-store.port';
import { PostgresEventStore } from './postgres.event-store';

/**
 * The PostgreSQL log's retention by week (migrations/0019): streams written now are moved into a week
 * five weeks back (what a log written then looks like), and a pass as of now drops that week after
 * moving on what must stay.
 */
describe('PostgreSQL log retention by week', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let currentWeek: string;
  const oldWeek = (): string => addDays(currentWeek, -35);

  const partitionsOf = async (streamId: string): Promise<string[]> =>
    (
      await db.pool.query<{ partition: string }>(
        'SELECT DISTINCT tableoid::regclass::text AS partition FROM events WHERE stream_key = es_stream_key($1) ORDER BY 1',
        [streamId],
      )
    ).rows.map((r) => r.partition);

  /** The streams moved into an old week's partition, as if written then. */
  const age = async (week: string, streamIds: string[]): Promise<void> => {
    if (!(await datedPartitions(db.pool, 'events', 'events_w')).includes(week))
      await createDatedPartition(
        db.pool,
        { table: 'events', column: 'kept_on', prefix: 'events_w', defaultPartition: 'events_unsorted' },
        week,
        false,
      );
    await db.pool.query('UPDATE events SET kept_on = $1 WHERE es_stream_name(stream_key) = ANY($2::text[])', [
      week,
      streamIds,
    ]);
  };

  const wholeLog = async (): Promise<readonly RecordedEvent[]> => store.readAll({ from: START, maxCount: 100_000 });

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
    currentWeek = (
      await db.pool.query<{ week: string }>(
        `SELECT date_trunc('week', clock_timestamp() AT TIME ZONE 'UTC')::date::text AS week`,
      )
    ).rows[0]!.week;
  });
  afterAll(() => db.drop());

  it('puts a new run stream in its week, and every other stream in events_kept', async () => {
    await store.appendToStreams([
      { streamId: 'run-fresh', expected: 'no_stream', events: [{ type: 'RunScheduled', data: {} }] },
      { streamId: 'job-fresh', expected: 'no_stream', events: [{ type: 'JobDefined', data: {} }] },
    ]);
    expect(await partitionsOf('run-fresh')).toEqual([`events_w${currentWeek.replace(/-/g, '')}`]);
    expect(await partitionsOf('job-fresh')).toEqual(['events_kept']);
  });

  it('drops a past week whole, after moving on the runs not over and the streams kept for ever', async () => {
    for (const id of ['run-over', 'run-live', 'job-upgraded'])
      await store.appendToStream(id, 'no_stream', [{ type: 'Happened', data: { id } }]);
    await store.appendToStream('run-over', 0n, [{ type: 'RunSucceeded', data: {} }]);
    await age(oldWeek(), ['run-over', 'run-live', 'job-upgraded']);
    // The global log shows an event once no older transaction of the server (any database) is in
    // flight: under load, a while. Once the last append shows, every earlier one does.
    let logBefore: readonly RecordedEvent[] = [];
    await waitFor(
      async () => (logBefore = await wholeLog()).some((e) => e.streamId === 'run-over' && e.revision === 1n),
      { description: 'the appended events in the global log' },
    );

    const asked: string[] = [];
    const report = await store.expireStreams({
      streamPrefix: 'run-',
      before: new Date(),
      over: async (ids) => {
        asked.push(...ids);
        return new Set(ids.filter((id) => id === 'run-over'));
      },
    });

    expect(report).toEqual({ expiredStreams: 1, keptStreams: 1, droppedWeeks: [oldWeek()] });
    // Asked about the old week's runs only: not this week's, not a job's.
    expect(asked.sort()).toEqual(['run-live', 'run-over']);
    expect(await datedPartitions(db.pool, 'events', 'events_w')).not.toContain(oldWeek());
    expect(await store.readStream('run-over')).toEqual([]);
    expect(await partitionsOf('run-live')).toEqual([`events_w${currentWeek.replace(/-/g, '')}`]);
    expect(await partitionsOf('job-upgraded')).toEqual(['events_kept']);
    // Every other event reads as before, at the same position.
    const logAfter = await wholeLog();
    expect(logAfter.map((e) => [e.streamId, e.revision, e.position])).toEqual(
      logBefore.filter((e) => e.streamId !== 'run-over').map((e) => [e.streamId, e.revision, e.position]),
    );
    // A moved stream goes on where it is now.
    await store.appendToStream('run-live', 0n, [{ type: 'RunLeased', data: {} }]);
    expect((await store.readStream('run-live')).map((e) => e.revision)).toEqual([0n, 1n]);
    expect(await partitionsOf('run-live')).toEqual([`events_w${currentWeek.replace(/-/g, '')}`]);
    // The stream that went can begin again (a run id used anew), from revision 0.
    await store.appendToStream('run-over', 'no_stream', [{ type: 'RunScheduled', data: {} }]);
    expect((await store.readStream('run-over')).map((e) => e.revision)).toEqual([0n]);
  });

  it('never drops a week an event came to while the pass read it, nor the current week', async () => {
    await store.appendToStream('run-late', 'no_stream', [{ type: 'RunScheduled', data: {} }]);
    await age(oldWeek(), ['run-late']);
    const report = await store.expireStreams({
      streamPrefix: 'run-',
      before: new Date(Date.parse(`${currentWeek}T00:00:00Z`) + 30 * 86_400_000),
      over: async (ids) => {
        // Written to after it was taken for over: the week must stay, the stream whole.
        await store.appendToStream('run-late', 0n, [{ type: 'RunSucceeded', data: {} }]);
        return new Set(ids);
      },
    });
    expect(report.droppedWeeks).toEqual([]);
    expect((await store.readStream('run-late')).map((e) => e.type)).toEqual(['RunScheduled', 'RunSucceeded']);
    expect(await datedPartitions(db.pool, 'events', 'events_w')).toContain(currentWeek);

    const next = await store.expireStreams({
      streamPrefix: 'run-',
      before: new Date(),
      over: async (ids) => new Set(ids),
    });
    expect(next).toEqual({ expiredStreams: 1, keptStreams: 0, droppedWeeks: [oldWeek()] });
    expect(await store.readStream('run-late')).toEqual([]);
  });

  it('makes the weeks ahead, and gives rows of a week without a partition their own', async () => {
    const later = addDays(currentWeek, 35);
    await db.pool.query(
      `INSERT INTO events (event_id, stream_key, stream_revision, event_type, data, kept_on)
       VALUES (gen_random_uuid(), es_stream_key('run-unsorted'), 0, 'RunScheduled', '{}', $1)`,
      [later],
    );
    expect(await partitionsOf('run-unsorted')).toEqual(['events_unsorted']);
    await store.expireStreams({ streamPrefix: 'run-', before: new Date(), over: async () => new Set() });
    const weeks = await datedPartitions(db.pool, 'events', 'events_w');
    expect(weeks).toEqual(
      expect.arrayContaining([currentWeek, addDays(currentWeek, 7), addDays(currentWeek, 14), later]),
    );
    expect(await partitionsOf('run-unsorted')).toEqual([`events_w${later.replace(/-/g, '')}`]);
  });
});
