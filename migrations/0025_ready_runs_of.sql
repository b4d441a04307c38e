-- The claim's read of one (queue, team, priority)'s ready runs (CLAIM_SQL's `scanned`), oldest first:
-- a range of runs_claim_idx read in order, each run's job checked as it is read (paused, or at its run
-- limit), stopping at the limit. The batch is a few dozen of a backlog that may be millions.
--
-- Inline in the claim, the generic plan the server runs it on (units of work plan once per
-- connection) estimated one row for the range, whatever its size, and so found a scan of the whole
-- live partition (or a bitmap of another index) with a sort cheaper than the ordered range: in a
-- drain of 20,000 runs it read every ready run of the group and probed jobs_paused_idx for each, 18,000
-- rows and 38,000 buffers a claim of 100, 20 of its 45 ms. The function's settings leave the planner
-- the ordered range alone. plpgsql: its plan is kept for the session, and `runs` is found by name at
-- each call (migrations/0012: a rebuild swaps the table).
CREATE FUNCTION ready_runs_of(
  p_queue text, p_team text, p_priority text,
  -- Ready by then: now, or the worker's prefetch ahead.
  p_until timestamptz,
  -- Runs left out (reserved while their rows lag the log), and jobs at their run limit.
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
    SELECT r.run_id::text, r.job::text, r.team, r.priority, r.available_at FROM runs r
     WHERE r.finished_on = 'infinity' AND r.queue = p_queue AND r.team = p_team AND r.priority = p_priority
       AND r.state IN ('scheduled', 'retry_wait') AND r.available_at <= p_until
       AND r.run_id <> ALL (p_skip_runs) AND r.job <> ALL (p_skip_jobs)
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.paused)
     ORDER BY r.available_at
     LIMIT p_limit;
END
$$;
