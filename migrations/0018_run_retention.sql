-- Retention of finished runs (docs/operations.md, "Retention"): `runs` and
-- `run_listing` partitioned by the day a run finished, so that a day past
-- RETENTION_DAYS goes by dropping its partitions, never by a DELETE on a hot
-- table.
--
-- The partition key is `finished_on`: 'infinity' for a run that can still
-- change (scheduled, leased, retry_wait, and dead until it is discarded), the
-- UTC day of `finished_at` for one that cannot (succeeded, cancelled, dead and
-- discarded). A run's last transition moves its rows from the `_live`
-- partition to its day's (PostgreSQL moves a row whose partition key an UPDATE
-- changes), so `runs_live` holds the live runs only: the claim's, reaper's and
-- quota's partial indexes stay as small as the work waiting. Day partitions
-- (`runs_dYYYYMMDD`) are created ahead by the scheduler's retention pass
-- (apps/scheduler/src/retention); `_unsorted` (the default partition) takes a
-- finished day that has none, so that no write ever fails for want of one,
-- and is emptied by the same pass.
--
-- A key of a partitioned table must hold its partition key: (run_id,
-- finished_on). Nothing makes run_id unique across partitions by itself, so
-- the writers do (libs/projections/src/runs/runs.sql.ts): transitions update the live
-- row only (no transition leaves a finished state), and a row is inserted
-- only where none of its run exists.

CREATE TABLE runs_partitioned (
  LIKE runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
  finished_at timestamptz,
  finished_on date NOT NULL DEFAULT 'infinity',
  PRIMARY KEY (run_id, finished_on)
) PARTITION BY LIST (finished_on);
CREATE TABLE runs_live PARTITION OF runs_partitioned FOR VALUES IN ('infinity');
CREATE TABLE runs_unsorted PARTITION OF runs_partitioned DEFAULT;

CREATE TABLE run_listing_partitioned (
  LIKE run_listing,
  finished_on date NOT NULL DEFAULT 'infinity',
  -- The listings read by team, job or queue; a run's row is found by this key when it moves.
  PRIMARY KEY (run_id, finished_on)
) PARTITION BY LIST (finished_on);
CREATE TABLE run_listing_live PARTITION OF run_listing_partitioned FOR VALUES IN ('infinity');
CREATE TABLE run_listing_unsorted PARTITION OF run_listing_partitioned DEFAULT;

-- When the rows there finished: the time of the run's last event where this
-- database holds the log (the event's own time, as the runs projection folds
-- it), else the row's last write.
CREATE TEMPORARY TABLE finished_runs ON COMMIT DROP AS
  SELECT r.run_id,
         coalesce(
           (SELECT coalesce(e.data->>'completedAt', e.data->>'cancelledAt', e.data->>'discardedAt')::timestamptz
              FROM events e WHERE e.stream_id = run_stream_id(r.run_id)
             ORDER BY e.stream_revision DESC LIMIT 1),
           r.updated_at) AS finished_at
    FROM runs r WHERE r.state IN ('succeeded', 'cancelled') OR (r.state = 'dead' AND r.discarded);

-- Every day that has finished runs gets its partitions now, and so do yesterday to a week ahead
-- (the scheduler's retention pass creates the later ones): a run finishing today goes to its day's.
DO $$
DECLARE
  v_day date;
BEGIN
  FOR v_day IN SELECT (finished_at AT TIME ZONE 'UTC')::date FROM finished_runs
               UNION SELECT generate_series((now() AT TIME ZONE 'UTC')::date - 1, (now() AT TIME ZONE 'UTC')::date + 7, interval '1 day')::date LOOP
    EXECUTE format('CREATE TABLE runs_d%s PARTITION OF runs_partitioned FOR VALUES IN (%L)', to_char(v_day, 'YYYYMMDD'), v_day);
    EXECUTE format('CREATE TABLE run_listing_d%s PARTITION OF run_listing_partitioned FOR VALUES IN (%L)', to_char(v_day, 'YYYYMMDD'), v_day);
  END LOOP;
END
$$;

INSERT INTO runs_partitioned
SELECT r.*, f.finished_at, coalesce((f.finished_at AT TIME ZONE 'UTC')::date, 'infinity')
  FROM runs r LEFT JOIN finished_runs f USING (run_id);
INSERT INTO run_listing_partitioned
SELECT l.*, coalesce((f.finished_at AT TIME ZONE 'UTC')::date, 'infinity')
  FROM run_listing l LEFT JOIN finished_runs f USING (run_id);

DROP TABLE runs;
DROP TABLE run_listing;
ALTER TABLE runs_partitioned RENAME TO runs;
ALTER TABLE run_listing_partitioned RENAME TO run_listing;
ALTER INDEX runs_partitioned_pkey RENAME TO runs_pkey;
ALTER INDEX run_listing_partitioned_pkey RENAME TO run_listing_pkey;

-- The indexes of 0003 to 0013, on every partition. Those of waiting, leased and dead runs are empty on
-- the day partitions: no finished run is in those states.
CREATE INDEX runs_claim_idx ON runs (queue, team, priority, available_at) WHERE state IN ('scheduled', 'retry_wait');
CREATE INDEX runs_reap_idx ON runs (lease_expires_at) WHERE state = 'leased';
CREATE INDEX runs_dlq_idx ON runs (team, dead_at DESC, run_id DESC) WHERE state = 'dead' AND NOT discarded;
CREATE INDEX runs_leased_job_idx ON runs (job) WHERE state = 'leased';
CREATE INDEX runs_ready_job_idx ON runs (job, available_at) WHERE state IN ('scheduled', 'retry_wait');
CREATE INDEX runs_pending_idx ON runs (team) WHERE state IN ('scheduled', 'retry_wait', 'leased');
CREATE INDEX runs_ended_team_idx ON runs (team, due_at DESC, run_id DESC) WHERE state IN ('dead', 'cancelled');
CREATE INDEX runs_ended_job_idx ON runs (job, due_at DESC, run_id DESC) WHERE state IN ('dead', 'cancelled');
CREATE INDEX run_listing_team_idx ON run_listing (team, due_at DESC, run_id DESC);
CREATE INDEX run_listing_job_idx ON run_listing (job, due_at DESC, run_id DESC);
CREATE INDEX run_listing_queue_idx ON run_listing (queue, due_at DESC, run_id DESC);
-- The runs that hold a large payload by reference (migrations/0017), few: retention deletes a payload
-- no run refers to any more.
CREATE INDEX runs_payload_ref_idx ON runs (((definition->'payloadRef'->>'sha256'))) WHERE definition ? 'payloadRef';
CREATE STATISTICS run_listing_keys (dependencies) ON team, job, queue FROM run_listing;

-- 0011's vacuum settings, now on the partition every transition writes (a partitioned table has no storage
-- of its own). The day partitions are written once per run and never updated.
ALTER TABLE runs_live SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 2000,
  autovacuum_vacuum_cost_delay = 0,
  autovacuum_analyze_scale_factor = 0.02
);

-- A decision's first round trip (0012), the live partition first: the runs a command decides about are
-- nearly always there, and a lookup by run id alone probes every partition's key.
-- With finished_at too, which runFromRow reads.
DROP FUNCTION lock_and_read_runs(text[]);
CREATE FUNCTION lock_and_read_runs(p_run_ids text[])
RETURNS TABLE (
  run_id text, job text, state text, revision bigint, definition jsonb, attempt integer, attempt_limit integer,
  available_at timestamptz, fencing_token bigint, worker_id text, leased_at timestamptz,
  lease_expires_at timestamptz, last_error text, death jsonb, discarded boolean, finished_at timestamptz
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_found integer;
BEGIN
  PERFORM pg_advisory_xact_lock(stream_lock_key(run_stream_id(u.id)))
     FROM unnest(p_run_ids) AS u(id) ORDER BY run_stream_id(u.id);
  RETURN QUERY
    SELECT r.run_id::text, r.job::text, r.state, r.revision, r.definition, r.attempt, r.attempt_limit,
           r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death,
           r.discarded, r.finished_at
      FROM runs r WHERE r.finished_on = 'infinity' AND r.run_id = ANY(p_run_ids);
  GET DIAGNOSTICS v_found = ROW_COUNT;
  IF v_found < cardinality(p_run_ids) THEN
    RETURN QUERY
      SELECT r.run_id::text, r.job::text, r.state, r.revision, r.definition, r.attempt, r.attempt_limit,
             r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death,
             r.discarded, r.finished_at
        FROM runs r WHERE r.finished_on <> 'infinity' AND r.run_id = ANY(p_run_ids);
  END IF;
END
$$;

-- What retention has done: the first day still kept (runs that finished before it are gone, and a
-- projection writing them again skips them), and the runs it dropped, so that asking for one answers
-- 410 Gone rather than 404 (GET /v1/runs/{id}). The dropped runs are kept as hashes of their ids
-- (hashtextextended, 64 bits), sorted, in chunks of up to 1,000 per row: 8 bytes a run, one row per
-- day probed by (day, first_hash). Kept for RETIRED_RUN_DAYS, then deleted: a small table, not a hot one.
CREATE TABLE run_retention (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  kept_since date NOT NULL
);
INSERT INTO run_retention (kept_since) VALUES ('-infinity');

CREATE TABLE retired_runs (
  retired_on date NOT NULL,
  first_hash bigint NOT NULL,
  hashes     bigint[] NOT NULL,
  PRIMARY KEY (retired_on, first_hash)
);
