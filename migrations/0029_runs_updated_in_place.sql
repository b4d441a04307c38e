-- A run's `runs` row is updated in place (a HOT update): no index of `runs` depends on the columns a
-- transition changes.
--
-- A transition writes a new version of the run's row. When a changed column is one an index reads, in
-- its key or in its WHERE, every index of the table gets an entry for the new version, and the version
-- goes wherever there is room. Every partial index of `runs` was by `state`, so every transition was
-- such an update: a drained run (leased, then succeeded) wrote 5 index entries into `runs`' indexes,
-- and each of its two row versions moved to another page (a Heap/LOCK record before each). When no
-- indexed column changes and the page has room, PostgreSQL writes the version beside the old one,
-- adds no index entry, and logs only the bytes that differ.
--
-- What the partial indexes answered moves to where the run's state makes a row appear and disappear,
-- written in the same statement as the `runs` row (libs/projections/src/runs, as `ready_runs` is):
--  - the leased runs, by job (the claim's run limits, the overlap pass, a team's pending runs) and by
--    lease expiry (the reaper): `run_leases`, a row per leased run, keyed by job and run (one index
--    serves the counts per job and finds a run's row);
--  - the waiting runs, by job, team or queue (listings, queue counts, a team's pending runs):
--    `ready_runs`, which gains the run's state (scheduled or retry_wait) and due time;
--  - the dead and cancelled runs (the DLQ, listings of ended runs): `runs.ended`, the state when it is
--    one of those and NULL otherwise, so that a transition between the other states leaves it as it
--    was; the partial indexes of ended runs are by it.
--
-- The day partitions of `runs` leave half of each page for the versions of the rows written there
-- (fillfactor 50): a claim leases the oldest runs, which were written side by side, in one statement,
-- so every row of a page gets its new version at once, while the old ones are still visible; the
-- completions come once those can be pruned. At 70, 57% of the updates in the bench's drain found room
-- on their page; at 50, 89%. The price is in storage: a finished run's row takes about 430 bytes of
-- `runs` instead of about 260. Existing partitions keep their filled pages and leave the room on new ones.
--
-- On a large database this rewrites `runs` once (the new column with its check), holding its lock.

ALTER TABLE runs ADD COLUMN ended text;
UPDATE runs SET ended = state WHERE state IN ('dead', 'cancelled');
ALTER TABLE runs ADD CONSTRAINT runs_ended_check
  CHECK (ended IS NOT DISTINCT FROM CASE WHEN state IN ('dead', 'cancelled') THEN state END);

DROP INDEX runs_dlq_idx;
DROP INDEX runs_ended_job_idx;
DROP INDEX runs_ended_team_idx;
CREATE INDEX runs_dlq_idx ON runs (team, dead_at DESC, run_id DESC) WHERE ended = 'dead' AND NOT discarded;
CREATE INDEX runs_ended_job_idx ON runs (job, due_at DESC, run_id DESC) WHERE ended IS NOT NULL;
CREATE INDEX runs_ended_team_idx ON runs (team, due_at DESC, run_id DESC) WHERE ended IS NOT NULL;

CREATE TABLE run_leases (
  run_id           text COLLATE "C" NOT NULL,
  job              text COLLATE "C" NOT NULL,
  team             text NOT NULL,
  queue            text NOT NULL,
  priority         text NOT NULL,
  due_at           timestamptz NOT NULL,
  lease_expires_at timestamptz NOT NULL,
  PRIMARY KEY (job, run_id)
);
CREATE INDEX run_leases_expiry_idx ON run_leases (lease_expires_at);
ALTER TABLE run_leases SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 2000,
  autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02);
INSERT INTO run_leases (run_id, job, team, queue, priority, due_at, lease_expires_at)
SELECT run_id, job, team, queue, priority, due_at, lease_expires_at FROM runs WHERE state = 'leased';

ALTER TABLE ready_runs ADD COLUMN state text, ADD COLUMN due_at timestamptz;
UPDATE ready_runs q SET state = r.state, due_at = r.due_at FROM runs r WHERE r.run_id = q.run_id;
DELETE FROM ready_runs WHERE state IS NULL;
ALTER TABLE ready_runs ALTER COLUMN state SET NOT NULL, ALTER COLUMN due_at SET NOT NULL;

DROP INDEX runs_leased_job_idx;
DROP INDEX runs_reap_idx;
DROP INDEX runs_pending_idx;
DROP INDEX runs_ready_job_idx;

DO $$
DECLARE
  v_partition regclass;
BEGIN
  FOR v_partition IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'runs'::regclass LOOP
    EXECUTE format('ALTER TABLE %s SET (fillfactor = 50)', v_partition);
  END LOOP;
END
$$;

-- The leased runs per job, from run_leases' primary key (0023, 0027 read the partial index of leased
-- runs): of the limited jobs of the queues served (the claim), and of every job (the overlap pass).
CREATE OR REPLACE FUNCTION leased_runs_by_job(p_queues text[])
RETURNS TABLE (job text, leased bigint)
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
DECLARE
  -- Past this many limited jobs, one pass over every leased run costs less than a probe per job.
  c_probes CONSTANT integer := 100;
  v_jobs text[];
BEGIN
  SELECT array_agg(j.name) INTO v_jobs
    FROM (SELECT name FROM jobs WHERE run_limit IS NOT NULL AND definition->>'queue' = ANY(p_queues)
           LIMIT c_probes + 1) j;
  IF v_jobs IS NULL THEN
    RETURN;
  ELSIF cardinality(v_jobs) <= c_probes THEN
    RETURN QUERY
      SELECT l.job::text, count(*) FROM run_leases l WHERE l.job = ANY(v_jobs) GROUP BY l.job;
  ELSE
    RETURN QUERY
      SELECT l.job::text, count(*) FROM run_leases l GROUP BY l.job;
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION leased_runs_by_job()
RETURNS TABLE (job text, leased bigint)
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
BEGIN
  RETURN QUERY
    SELECT l.job::text, count(*) FROM run_leases l GROUP BY l.job;
END
$$;
