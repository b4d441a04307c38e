-- The claim's count of leased runs per job (CLAIM_SQL's limited_leased, for the jobs at their run
-- limit), read through an index scan of the partial index of leased runs, never a bitmap scan.
--
-- Under churn that index holds an entry for every run leased since the last vacuum, most of them
-- finished since. A bitmap scan visits the heap for every one of those dead entries at every claim
-- and leaves them as they were; an index scan visits each once and marks it dead in the index
-- (PostgreSQL's kill_prior_tuple), so the next claim steps over it without reading the heap. In a
-- drain of 20,000 runs the bitmap scan read 18,700 entries and 1,766 heap pages to find 200 leased
-- runs, 5.5 ms of an 8 ms claim (auto_explain), and grew until autovacuum came.
--
-- The planner chose the bitmap from its estimate; the function's own settings take it (and a scan
-- of the whole live partition) off its choices for this one query. plpgsql: its plan is kept for
-- the session, and `runs` is found by name at each call (migrations/0012: a rebuild swaps the table).
CREATE FUNCTION leased_runs_by_job()
RETURNS TABLE (job text, leased bigint)
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
BEGIN
  RETURN QUERY
    SELECT r.job::text, count(*) FROM runs r WHERE r.finished_on = 'infinity' AND r.state = 'leased' GROUP BY r.job;
END
$$;
