import { Pool } from 'pg';
import { survivingConnectionLoss } from '@chronicle/platform';
import type { Measurement, Metric } from './scenario';

/** Writers in parallel, so commits can share WAL flushes as a busy queue's would. */
const WRITERS = 8;
const BATCH_ROWS = 100;

/** The event-sourced floor: as many writers as the bench's workers, claims of the lease batch's size. */
const FLOOR_WRITERS = 2;
const FLOOR_BATCH = 100;
const FLOOR_ENQUEUE_BATCH = 1000;

export const CEILING_METRICS: readonly Metric[] = [
  { key: 'singleRowCommitsPerSecond', unit: 'single-row INSERT commits/s', higherIsBetter: true },
  { key: 'batchRowsPerSecond', unit: `rows/s in ${BATCH_ROWS}-row INSERTs`, higherIsBetter: true },
  {
    key: 'eventSourcedDrainRunsPerSecond',
    unit: 'runs/s drained, an event per transition (SQL alone)',
    higherIsBetter: true,
  },
  {
    key: 'eventSourcedEnqueueRunsPerSecond',
    unit: 'runs/s enqueued, an event per run (SQL alone)',
    higherIsBetter: true,
  },
];

/**
 * What this PostgreSQL server commits at all, in the same run: a plain table
 * with a job-like row, 8 writers, autocommit. Our figures and the peers' read
 * as a fraction of these.
 */
export async function measureCeiling(databaseUrl: string, seconds: number): Promise<Measurement> {
  const pool = survivingConnectionLoss(
    new Pool({ connectionString: databaseUrl, max: WRITERS, application_name: 'bench-ceiling' }),
  );
  try {
    await pool.query(
      'CREATE TABLE ceiling (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
    );
    const single = await writeFor(pool, seconds, 1, (n) => ({
      text: 'INSERT INTO ceiling (payload) VALUES ($1)',
      values: [{ n, dueAt: Date.now() }],
    }));
    const batch = await writeFor(pool, seconds, BATCH_ROWS, (n) => ({
      text: 'INSERT INTO ceiling (payload) SELECT * FROM unnest($1::jsonb[])',
      values: [Array.from({ length: BATCH_ROWS }, (_, i) => JSON.stringify({ n: n + i, dueAt: Date.now() }))],
    }));
    const drained = await drainFloor(pool, seconds);
    const enqueued = await enqueueFloor(pool, seconds);
    return {
      values: {
        singleRowCommitsPerSecond: single,
        batchRowsPerSecond: batch,
        eventSourcedDrainRunsPerSecond: drained,
        eventSourcedEnqueueRunsPerSecond: enqueued,
      },
    };
  } finally {
    await pool.end();
  }
}

function writeFor(
  pool: Pool,
  seconds: number,
  rowsPerStatement: number,
  statement: (n: number) => { text: string; values: unknown[] },
): Promise<number> {
  return runFor(seconds, WRITERS, async (rows) => {
    await pool.query(statement(rows));
    return rowsPerStatement;
  });
}

/**
 * The least an event-sourced queue can write on this server, with no application at all: a run table
 * with a claim index and a log with a unique (stream, revision), each transition one event and one
 * row write in one statement. SQL only, sent from here: no HTTP, no decider, no JSON built per run, no
 * read model beyond the row, no projector, no audit index. Any event-sourced drain on this server,
 * ours included, is below `eventSourcedDrainRunsPerSecond`, and it shares the CPUs with its application.
 */
const FLOOR_SCHEMA = `
  CREATE TABLE floor_runs (run_id text PRIMARY KEY, state text NOT NULL, available_at timestamptz NOT NULL, payload jsonb NOT NULL);
  CREATE INDEX floor_runs_ready_idx ON floor_runs (available_at) WHERE state = 'scheduled';
  CREATE TABLE floor_events (position bigserial PRIMARY KEY, stream_id text NOT NULL, revision int NOT NULL,
    type text NOT NULL, data json NOT NULL, metadata json NOT NULL, UNIQUE (stream_id, revision))`;
const FLOOR_METADATA =
  '{"actor":"worker:bench-1","schemaVersion":1,"team":"bench","queue":"bench","priority":"default"}';

/** Lease FLOOR_BATCH ready runs (RunLeased, the row updated), then complete them (RunSucceeded, the row deleted). */
async function drainFloor(pool: Pool, seconds: number): Promise<number> {
  await pool.query(FLOOR_SCHEMA);
  // More than the writers can take in the time, at about 40,000 runs/s.
  await pool.query(
    `INSERT INTO floor_runs SELECT 'run-' || g, 'scheduled', now(), jsonb_build_object('n', g) FROM generate_series(1, $1) g`,
    [Math.max(50_000, seconds * 40_000)],
  );
  await pool.query('VACUUM ANALYZE floor_runs');
  const lease = `WITH claimed AS (
      SELECT run_id FROM floor_runs WHERE state = 'scheduled' ORDER BY available_at LIMIT ${FLOOR_BATCH} FOR UPDATE SKIP LOCKED
    ), logged AS (
      INSERT INTO floor_events (stream_id, revision, type, data, metadata)
      SELECT run_id, 1, 'RunLeased', json_build_object('workerId', 'bench-1', 'fencingToken', 1, 'leaseExpiresAt', now() + interval '30 s'), '${FLOOR_METADATA}'
        FROM claimed
    )
    UPDATE floor_runs r SET state = 'leased' FROM claimed c WHERE r.run_id = c.run_id RETURNING r.run_id`;
  const complete = `WITH logged AS (
      INSERT INTO floor_events (stream_id, revision, type, data, metadata)
      SELECT id, 2, 'RunSucceeded', json_build_object('completedAt', now()), '${FLOOR_METADATA}' FROM unnest($1::text[]) AS u(id)
    )
    DELETE FROM floor_runs r WHERE r.run_id = ANY($1::text[]) AND r.state = 'leased'`;
  return runFor(seconds, FLOOR_WRITERS, async () => {
    const { rows } = await pool.query<{ run_id: string }>(lease);
    if (rows.length === 0) return null;
    await pool.query(complete, [rows.map((r) => r.run_id)]);
    return rows.length;
  });
}

/** One writer, as the bulk scenario's one call at a time: FLOOR_ENQUEUE_BATCH runs a statement (RunScheduled, the row). */
async function enqueueFloor(pool: Pool, seconds: number): Promise<number> {
  let next = 0;
  return runFor(seconds, 1, async () => {
    const from = next;
    next += FLOOR_ENQUEUE_BATCH;
    await pool.query(
      `WITH runs AS (SELECT 'new-' || g AS run_id, jsonb_build_object('dueAt', now(), 'n', g) AS payload FROM generate_series($1::int, $2::int) g),
       logged AS (
         INSERT INTO floor_events (stream_id, revision, type, data, metadata)
         SELECT run_id, 0, 'RunScheduled', json_build_object('runId', run_id, 'job', 'bench.noop', 'team', 'bench', 'queue', 'bench',
                'priority', 'default', 'dueAt', now(), 'payload', payload), '${FLOOR_METADATA}' FROM runs
       )
       INSERT INTO floor_runs SELECT run_id, 'scheduled', now(), payload FROM runs`,
      [from, next - 1],
    );
    return FLOOR_ENQUEUE_BATCH;
  });
}

/**
 * `writers` loops of `step` (told how many rows were done so far) until the time is up or a step finds
 * nothing (null): rows per second.
 */
async function runFor(
  seconds: number,
  writers: number,
  step: (done: number) => Promise<number | null>,
): Promise<number> {
  const deadline = Date.now() + seconds * 1000;
  let rows = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (Date.now() < deadline) {
        const done = await step(rows);
        if (done === null) return;
        rows += done;
      }
    }),
  );
  return rows / (Number(process.hrtime.bigint() - started) / 1e9);
}
