-- The claim's queue of waiting runs, apart from `runs`: the ready queue among the read models.
--
-- `runs` is partitioned by the day a run is due (0025), so its claim index was one per day: a claim of a
-- queue shared by 50 teams read 150 (team, priority) ranges, each from every day's partition (4,480
-- buffers for a claim of 10 at 10,000 ready runs, against 511 on the one live partition before 0025).
-- `ready_runs` holds a row per waiting run (scheduled or retry_wait), the columns the claim orders and
-- filters by, in one table: a run's row is written as it starts to wait and deleted when it is leased,
-- cancelled or ends, in the statement that writes its `runs` row (libs/projections/src/runs). The claim reads
-- this table's index and then the runs it locked by key.
CREATE TABLE ready_runs (
  run_id       text COLLATE "C" PRIMARY KEY,
  queue        text NOT NULL,
  team         text NOT NULL,
  priority     text NOT NULL,
  job          text COLLATE "C" NOT NULL,
  available_at timestamptz NOT NULL
);
CREATE INDEX ready_runs_claim_idx ON ready_runs (queue, team, priority, available_at);
CREATE INDEX ready_runs_job_idx ON ready_runs (job, available_at);
ALTER TABLE ready_runs SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 2000,
  autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02);

INSERT INTO ready_runs (run_id, queue, team, priority, job, available_at)
SELECT run_id, queue, team, priority, job, available_at FROM runs WHERE state IN ('scheduled', 'retry_wait');

DROP INDEX runs_claim_idx;

-- The claim's read of one (queue, team, priority)'s ready runs (CLAIM_SQL's `scanned`), oldest first:
-- a range of ready_runs_claim_idx read in order, each run's job checked as it is read (paused, or at its run
-- limit), stopping at the limit. The batch is a few dozen of a backlog that may be millions.
--
-- Inline in the claim, the generic plan the server runs it on (units of work plan once per
-- connection) estimated one row for the range, whatever its size, and so found a scan of the whole
-- live partition (or a bitmap of another index) with a sort cheaper than the ordered range: in a
-- drain of 20,000 runs it read every ready run of the group and probed jobs_paused_idx for each, 18,000
-- rows and 38,000 buffers a claim of 100, 20 of its 45 ms. The function's settings leave the planner
-- the ordered range alone. plpgsql: its plan is kept for the session, and `ready_runs` is found by name
-- at each call (migrations/0012: a rebuild swaps the table).
CREATE FUNCTION ready_runs_of(
  p_queue text, p_team text, p_priority text,
  p_until timestamptz,
  p_skip_runs text[], p_skip_jobs text[],
  p_limit integer)
RETURNS TABLE (run_id text, job text, team text, priority text, available_at timestamptz)
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
SET enable_seqscan = off
SET enable_sort = off
AS $$
BEGIN
  RETURN QUERY
    SELECT r.run_id::text, r.job::text, r.team, r.priority, r.available_at FROM ready_runs r
     WHERE r.queue = p_queue AND r.team = p_team AND r.priority = p_priority AND r.available_at <= p_until
       AND r.run_id <> ALL (p_skip_runs) AND r.job <> ALL (p_skip_jobs)
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.paused)
     ORDER BY r.available_at
     LIMIT p_limit;
END
$$;
