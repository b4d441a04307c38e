import { Client } from 'pg';
import { createEmptyDatabase, migrationsBefore } from '@chronicle/testing';
import { migrate } from './migrate';

/**
 * migrations/0037 lays `runs` and `events` out again: a database that held rows before it must read
 * them back the same after it, in every partition, and go on writing.
 */
describe('migration 0037 (lean row layouts) on a database with rows', () => {
  let db: Awaited<ReturnType<typeof createEmptyDatabase>>;
  let client: Client;

  beforeAll(async () => {
    db = await createEmptyDatabase();
    await migrate(db.url, await migrationsBefore('0037'));
    client = new Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  const rows = async (sql: string): Promise<Array<Record<string, unknown>>> => (await client.query(sql)).rows;
  const layout = async (table: string): Promise<string[]> =>
    (
      await rows(`SELECT attname FROM pg_attribute WHERE attrelid = '${table}'::regclass AND attnum > 0
                   AND NOT attisdropped ORDER BY attnum`)
    ).map((r) => r['attname'] as string);

  const partitions = async (): Promise<string[]> =>
    (
      await rows(`SELECT i.inhparent::regclass::text || ' ' || c.relname || ' ' || pg_get_expr(c.relpartbound, c.oid) AS p
                    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                   WHERE i.inhparent IN ('runs'::regclass, 'events'::regclass) ORDER BY 1`)
    ).map((r) => r['p'] as string);

  it('keeps every row and partition, moves the default partition, and writes on in the new layout', async () => {
    await client.query(`CREATE TABLE runs_d20261201 (LIKE runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
    await client.query(`ALTER TABLE runs ATTACH PARTITION runs_d20261201 FOR VALUES IN ('2026-12-01')`);
    await client.query(`CREATE TABLE runs_d20261202 (LIKE runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
    await client.query(`ALTER TABLE runs ATTACH PARTITION runs_d20261202 FOR VALUES IN ('2026-12-02')`);
    const insertRun = (id: string, keptOn: string, state: string): Promise<unknown> =>
      client.query(
        `INSERT INTO runs (run_id, team, job, queue, priority, state, available_at, due_at, attempt, revision,
                           attempt_limit, kept_on, fencing_token, worker_id, leased_at, lease_expires_at)
         VALUES ($1, 'ops', 'ops.sync', 'ops', 'default', $3, '2026-12-01T10:00:00Z', '2026-12-01T10:00:00Z', 1, 2, 3,
                 $2, 2, 'w-1', '2026-12-01T10:00:01Z', '2026-12-01T10:01:01Z')`,
        [id, keptOn, state],
      );
    await insertRun('run_kept', 'infinity', 'leased');
    await insertRun('run_dated', '2026-12-01', 'leased');
    await insertRun('run_default', '2026-11-30', 'leased'); // no partition of its day: the default one
    const insertEvent = (stream: string, keptOn: string, correlation: string): Promise<unknown> =>
      client.query(
        `INSERT INTO events (event_id, stream_id, stream_revision, event_type, data, actor, team, correlation_id,
                             schema_version, kept_on)
         VALUES (gen_random_uuid(), $1, 0, 'Noted', '{"n":1}', 'team:ops', 'ops', $3, 2, $2)`,
        [stream, keptOn, correlation],
      );
    await insertEvent('job-kept', 'infinity', '0b7e1c52-3f4d-4c8e-9a61-2d5f8e9b7a10');
    await insertEvent('run-default', '2026-11-30', 'req-1');
    const runsBefore = await rows('SELECT * FROM runs ORDER BY run_id');
    const partitionsBefore = await partitions();
    const eventsBefore = await rows('SELECT * FROM events ORDER BY global_position');

    expect(await migrate(db.url, await migrationsBefore('0038'))).toEqual([37]);

    // Every row reads back the same, the events with the new column besides.
    expect(await rows('SELECT * FROM runs ORDER BY run_id')).toEqual(runsBefore);
    expect(await rows('SELECT * FROM events ORDER BY global_position')).toEqual(
      eventsBefore.map((e) => ({ ...e, correlation_uuid: null })),
    );
    expect(await partitions()).toEqual(partitionsBefore);
    // A partition that held rows keeps its order; an empty one and the default one take the new one.
    const runs = await layout('runs');
    expect(runs.slice(0, 6)).toEqual(['run_id', 'team', 'job', 'queue', 'priority', 'due_at']);
    expect(await layout('runs_kept')).not.toEqual(runs);
    expect(await layout('runs_d20261202')).toEqual(runs);
    expect(await layout('runs_unsorted')).toEqual(runs);
    expect(await layout('events_unsorted')).toEqual(await layout('events'));
    // The partitions' storage settings and the tables' indexes came through.
    expect((await rows(`SELECT reloptions FROM pg_class WHERE relname = 'runs_d20261202'`))[0]).toEqual({
      reloptions: null,
    });
    expect(
      (await rows(`SELECT reloptions FROM pg_class WHERE relname = 'runs_unsorted'`))[0]?.['reloptions'],
    ).toContain('fillfactor=50');
    expect(
      (
        await rows(`SELECT count(*)::int AS n FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
                    WHERE c.relname = 'runs_kept'`)
      )[0],
    ).toEqual({ n: 4 });

    // Writing goes on: a row into each kind of partition, an event through es_append with each shape of
    // correlation id, and the log's sequence goes on from where it was.
    await insertRun('run_new_kept', 'infinity', 'scheduled');
    await insertRun('run_new_dated', '2026-12-02', 'scheduled');
    await insertRun('run_new_default', '2026-11-29', 'scheduled');
    expect((await rows(`SELECT count(*)::int AS n FROM runs`))[0]).toEqual({ n: 6 });
    const appended = await rows(
      `SELECT * FROM es_append(ARRAY['job-new'], ARRAY[-1]::bigint[], ARRAY[gen_random_uuid()],
         '[{"s":1,"n":0,"id":"6b0e1c52-3f4d-4c8e-9a61-2d5f8e9b7a10","type":"Noted","data":{},"cu":"0b7e1c52-3f4d-4c8e-9a61-2d5f8e9b7a10"},
           {"s":1,"n":1,"id":"7b0e1c52-3f4d-4c8e-9a61-2d5f8e9b7a10","type":"Noted","data":{},"cid":"req-2"}]')`,
    );
    expect(Number(appended[0]?.['r_position'])).toBeGreaterThan(Number(eventsBefore.at(-1)?.['global_position']));
    expect(
      await rows(`SELECT correlation_uuid::text, correlation_id FROM events WHERE stream_id = 'job-new' ORDER BY 1`),
    ).toEqual([
      { correlation_uuid: '0b7e1c52-3f4d-4c8e-9a61-2d5f8e9b7a10', correlation_id: null },
      { correlation_uuid: null, correlation_id: 'req-2' },
    ]);
  });
});
