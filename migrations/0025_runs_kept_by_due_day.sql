-- A run's row stays where it was written (the cost budget per run: nothing moved or rewritten when a
-- run finishes). `runs` and `run_listing` were partitioned by the day a run finished (0018), so a
-- run's last transition moved both rows, with every index entry, to another partition: in a drain
-- of 20,000 runs that move was 14.6 ms of a 23 ms completion of 100 runs (auto_explain).
--
-- The partition key is now `kept_on`, the day a row is kept by: the UTC day of the run's due time
-- when it is written, 'infinity' (`runs_kept`) once retention has kept it past that day. A
-- transition updates the row in place. The retention pass (apps/scheduler/src/retention) takes each
-- day past retention as a whole: the rows of runs that must stay (waiting, leased, dead and not
-- discarded, or finished within retention) move to `runs_kept`, the others are retired and the day's
-- partitions dropped. Rows in `runs_kept` are few (what outlived its day); those that finish go by a
-- DELETE there, at a retention pass, off the hot partitions.
--
-- A run's row is found by its key and its day: the due day, else 'infinity' (libs/projections/src/runs). Rows
-- already here keep their places: a finished run's day is the day it finished, and the live ones are
-- the kept ones.
ALTER TABLE runs RENAME COLUMN finished_on TO kept_on;
ALTER TABLE run_listing RENAME COLUMN finished_on TO kept_on;
ALTER TABLE runs_live RENAME TO runs_kept;
ALTER TABLE run_listing_live RENAME TO run_listing_kept;
DO $$
DECLARE
  v_index record;
BEGIN
  FOR v_index IN SELECT c.relname FROM pg_class c WHERE c.relkind = 'i' AND c.relname ~ '^(runs|run_listing)_live_' LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', v_index.relname, replace(v_index.relname, '_live_', '_kept_'));
  END LOOP;
END
$$;

-- Every partition of `runs` is updated now (0011's settings were on the live partition alone); the
-- retention pass gives new ones the same.
DO $$
DECLARE
  v_partition regclass;
BEGIN
  FOR v_partition IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'runs'::regclass LOOP
    EXECUTE format('ALTER TABLE %s SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 2000,
                      autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02)', v_partition);
  END LOOP;
END
$$;

-- A decision's first round trip (0012, 0018), yesterday to tomorrow and the kept runs first: the runs
-- a command decides about are nearly always there, and a lookup by run id alone probes every
-- partition's key.
CREATE OR REPLACE FUNCTION lock_and_read_runs(p_run_ids text[])
RETURNS TABLE (
  run_id text, job text, state text, revision bigint, definition jsonb, attempt integer, attempt_limit integer,
  available_at timestamptz, fencing_token bigint, worker_id text, leased_at timestamptz,
  lease_expires_at timestamptz, last_error text, death jsonb, discarded boolean, finished_at timestamptz
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_found integer;
  v_today date := (now() AT TIME ZONE 'UTC')::date;
  v_recent date[] := ARRAY[v_today - 1, v_today, v_today + 1, 'infinity'::date];
BEGIN
  PERFORM pg_advisory_xact_lock(stream_lock_key(run_stream_id(u.id)))
     FROM unnest(p_run_ids) AS u(id) ORDER BY run_stream_id(u.id);
  RETURN QUERY
    SELECT r.run_id::text, r.job::text, r.state, r.revision, r.definition, r.attempt, r.attempt_limit,
           r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death,
           r.discarded, r.finished_at
      FROM runs r WHERE r.kept_on = ANY(v_recent) AND r.run_id = ANY(p_run_ids);
  GET DIAGNOSTICS v_found = ROW_COUNT;
  IF v_found < cardinality(p_run_ids) THEN
    RETURN QUERY
      SELECT r.run_id::text, r.job::text, r.state, r.revision, r.definition, r.attempt, r.attempt_limit,
             r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death,
             r.discarded, r.finished_at
        FROM runs r WHERE r.kept_on <> ALL(v_recent) AND r.run_id = ANY(p_run_ids);
  END IF;
END
$$;

-- 0023 without the live partition: leased runs are in any partition now.
CREATE OR REPLACE FUNCTION leased_runs_by_job()
RETURNS TABLE (job text, leased bigint)
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
BEGIN
  RETURN QUERY
    SELECT r.job::text, count(*) FROM runs r WHERE r.state = 'leased' GROUP BY r.job;
END
$$;
