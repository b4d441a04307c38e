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
  {
    key: 'designFloorDrainRunsPerSecond',
    unit: "runs/s drained, with the design's writes: stream locks, rows kept, audit index (SQL alone)",
    higherIsBetter: true,
  },
  {
    key: 'designFloorEnqueueRunsPerSecond',
    unit: "runs/s enqueued, with the design's writes (SQL alone)",
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
    const drained = await drainFloor(pool, seconds, BARE_FLOOR);
    const enqueued = await enqueueFloor(pool, seconds, BARE_FLOOR);
    const designDrained = await drainFloor(pool, seconds, DESIGN_FLOOR);
    const designEnqueued = await enqueueFloor(pool, seconds, DESIGN_FLOOR);
    return {
      values: {
        singleRowCommitsPerSecond: single,
        batchRowsPerSecond: batch,
        eventSourcedDrainRunsPerSecond: drained,
        eventSourcedEnqueueRunsPerSecond: enqueued,
        designFloorDrainRunsPerSecond: designDrained,
        designFloorEnqueueRunsPerSecond: designEnqueued,
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
 * A floor's tables and statements: a run table with a claim index and a log, each transition one event
 * and one row write in one statement, sent as SQL from here (no HTTP, no decider, no JSON built per run,
 * no projector). `lease` claims FLOOR_BATCH runs and returns their `run_id`s; `complete` takes them
 * as $1; `enqueue` writes the runs $1 to $2.
 */
interface Floor {
  readonly schema: string;
  /** The run table. */
  readonly runs: string;
  readonly lease: string;
  readonly complete: string;
  readonly enqueue: string;
}

const FLOOR_METADATA =
  '{"actor":"worker:bench-1","schemaVersion":1,"team":"bench","queue":"bench","priority":"default"}';
const LEASED_DATA = `json_build_object('workerId', 'bench-1', 'fencingToken', 1, 'leaseExpiresAt', now() + interval '30 s')`;
const SCHEDULED_DATA = `json_build_object('runId', run_id, 'job', 'bench.noop', 'team', 'bench', 'queue', 'bench',
                'priority', 'default', 'dueAt', now(), 'payload', payload)`;
const NEW_RUNS = `SELECT 'new-' || g AS run_id, jsonb_build_object('dueAt', now(), 'n', g) AS payload FROM generate_series($1::int, $2::int) g`;

/**
 * The least an event-sourced queue can write on this server: a log with a unique (stream, revision),
 * and a run row that a completion deletes. No read model beyond the row, no audit index. Any
 * event-sourced drain on this server, ours included, is below `eventSourcedDrainRunsPerSecond`, and it
 * shares the CPUs with its application.
 */
const BARE_FLOOR: Floor = {
  runs: 'floor_runs',
  schema: `
    CREATE TABLE floor_runs (run_id text PRIMARY KEY, state text NOT NULL, available_at timestamptz NOT NULL, payload jsonb NOT NULL);
    CREATE INDEX floor_runs_ready_idx ON floor_runs (available_at) WHERE state = 'scheduled';
    CREATE TABLE floor_events (position bigserial PRIMARY KEY, stream_id text NOT NULL, revision int NOT NULL,
      type text NOT NULL, data json NOT NULL, metadata json NOT NULL, UNIQUE (stream_id, revision))`,
  lease: `WITH claimed AS (
      SELECT run_id FROM floor_runs WHERE state = 'scheduled' ORDER BY available_at LIMIT ${FLOOR_BATCH} FOR UPDATE SKIP LOCKED
    ), logged AS (
      INSERT INTO floor_events (stream_id, revision, type, data, metadata)
      SELECT run_id, 1, 'RunLeased', ${LEASED_DATA}, '${FLOOR_METADATA}' FROM claimed
    )
    UPDATE floor_runs r SET state = 'leased' FROM claimed c WHERE r.run_id = c.run_id RETURNING r.run_id`,
  complete: `WITH logged AS (
      INSERT INTO floor_events (stream_id, revision, type, data, metadata)
      SELECT id, 2, 'RunSucceeded', json_build_object('completedAt', now()), '${FLOOR_METADATA}' FROM unnest($1::text[]) AS u(id)
    )
    DELETE FROM floor_runs r WHERE r.run_id = ANY($1::text[]) AND r.state = 'leased'`,
  enqueue: `WITH runs AS (${NEW_RUNS}),
    logged AS (
      INSERT INTO floor_events (stream_id, revision, type, data, metadata)
      SELECT run_id, 0, 'RunScheduled', ${SCHEDULED_DATA}, '${FLOOR_METADATA}' FROM runs
    )
    INSERT INTO floor_runs SELECT run_id, 'scheduled', now(), payload FROM runs`,
};

/**
 * The bare floor with what the product's design makes every transition write, each in its cheapest
 * form: the log ordered by (writing transaction, position) with the stream's advisory lock taken
 * before its append (docs/architecture.md, "The event store"); the run's row kept when it finishes
 * (GET /v1/runs/{id} reads the read model), so a completion updates it; and the audit trail's index
 * row for every event, for the filters GET /v1/audit offers (migrations/0015), leaner than ours: by
 * team, actor and type, a BRIN for the time, and none for the stream (the log's own key serves it),
 * written in the append's statement rather than by a projector reading the log back. Still no HTTP,
 * no decider, no projector, no listing rows, no partitions.
 */
const DESIGN_FLOOR: Floor = {
  runs: 'design_runs',
  schema: `
    CREATE TABLE design_runs (run_id text PRIMARY KEY, state text NOT NULL, revision int NOT NULL,
      available_at timestamptz NOT NULL, payload jsonb NOT NULL);
    CREATE INDEX design_runs_ready_idx ON design_runs (available_at) WHERE state = 'scheduled';
    CREATE TABLE design_events (position bigserial NOT NULL, transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
      stream_id text NOT NULL, revision int NOT NULL, type text NOT NULL, data json NOT NULL, metadata json NOT NULL,
      recorded_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (transaction_id, position), UNIQUE (stream_id, revision));
    CREATE TABLE design_audit (position bigint PRIMARY KEY, stream_id text NOT NULL, revision int NOT NULL,
      event_type text NOT NULL, actor text, team text, recorded_at timestamptz NOT NULL);
    CREATE INDEX ON design_audit (team, position);
    CREATE INDEX ON design_audit (actor, position);
    CREATE INDEX ON design_audit (event_type, position);
    CREATE INDEX ON design_audit USING brin (recorded_at)`,
  lease: `WITH claimed AS MATERIALIZED (
      SELECT run_id FROM design_runs WHERE state = 'scheduled' ORDER BY available_at LIMIT ${FLOOR_BATCH} FOR UPDATE SKIP LOCKED
    ), ${loggedAndAudited('claimed', 1, 'RunLeased', LEASED_DATA)}
    UPDATE design_runs r SET state = 'leased', revision = 1 FROM claimed c WHERE r.run_id = c.run_id RETURNING r.run_id`,
  complete: `WITH runs AS (SELECT id AS run_id FROM unnest($1::text[]) AS u(id)),
    ${loggedAndAudited('runs', 2, 'RunSucceeded', `json_build_object('completedAt', now())`)}
    UPDATE design_runs r SET state = 'succeeded', revision = 2 WHERE r.run_id = ANY($1::text[]) AND r.state = 'leased'`,
  enqueue: `WITH runs AS MATERIALIZED (${NEW_RUNS}),
    ${loggedAndAudited('runs', 0, 'RunScheduled', SCHEDULED_DATA)}
    INSERT INTO design_runs SELECT run_id, 'scheduled', 0, now(), payload FROM runs`,
};

/** CTEs appending `type` at `revision` to the streams of `runs`' run_id under their locks, and indexing them. */
function loggedAndAudited(runs: string, revision: number, type: string, data: string): string {
  return `locked AS MATERIALIZED (
      SELECT r.*, pg_advisory_xact_lock(hashtextextended(r.run_id, 0)) AS lock FROM ${runs} r
    ), logged AS (
      INSERT INTO design_events (stream_id, revision, type, data, metadata)
      SELECT run_id, ${revision}, '${type}', ${data}, '${FLOOR_METADATA}' FROM locked
      RETURNING position, stream_id, revision, type, recorded_at
    ), audited AS (
      INSERT INTO design_audit SELECT position, stream_id, revision, type, 'worker:bench-1', 'bench', recorded_at FROM logged
    )`;
}

/** Lease FLOOR_BATCH ready runs (RunLeased), then complete them (RunSucceeded), with FLOOR_WRITERS writers. */
async function drainFloor(pool: Pool, seconds: number, floor: Floor): Promise<number> {
  await pool.query(floor.schema);
  // More than the writers can take in the time, at about 40,000 runs/s, enqueued as enqueueFloor does.
  const waiting = Math.max(50_000, seconds * 40_000);
  for (let from = 0; from < waiting; from += FLOOR_ENQUEUE_BATCH)
    await pool.query(floor.enqueue, [from, from + FLOOR_ENQUEUE_BATCH - 1]);
  await pool.query(`VACUUM ANALYZE ${floor.runs}`);
  return runFor(seconds, FLOOR_WRITERS, async () => {
    const { rows } = await pool.query<{ run_id: string }>(floor.lease);
    if (rows.length === 0) return null;
    await pool.query(floor.complete, [rows.map((r) => r.run_id)]);
    return rows.length;
  });
}

/** One writer, as the bulk scenario's one call at a time: FLOOR_ENQUEUE_BATCH runs a statement (RunScheduled, the row). */
async function enqueueFloor(pool: Pool, seconds: number, floor: Floor): Promise<number> {
  let next = 10_000_000;
  return runFor(seconds, 1, async () => {
    const from = next;
    next += FLOOR_ENQUEUE_BATCH;
    await pool.query(floor.enqueue, [from, next - 1]);
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
