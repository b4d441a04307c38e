-- The claim's count of leased runs per job (CLAIM_SQL's limited_leased) counts only what the claim
-- uses: the jobs with a run limit in the queues it serves. Until now it counted every leased run of
-- every job at every claim, limited or not, in any queue: a cost that grew with the runs leased
-- everywhere (3.8 us of PostgreSQL time per drained run in the bench, where no job has a limit).
-- The overlap pass keeps 0023's leased_runs_by_job() of every job: it starts from the jobs with
-- leased runs, whatever their queue.
--
-- A few limited jobs in the served queues: their leased runs, by the partial index of leased runs
-- (job). Many (a fleet of schedules whose overlap policy limits each to one run): one pass over the
-- leased runs, as before, rather than a probe per job. Index scans only, as 0023 explains.
CREATE FUNCTION leased_runs_by_job(p_queues text[])
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
      SELECT r.job::text, count(*) FROM runs r WHERE r.state = 'leased' AND r.job = ANY(v_jobs) GROUP BY r.job;
  ELSE
    RETURN QUERY
      SELECT r.job::text, count(*) FROM runs r WHERE r.state = 'leased' GROUP BY r.job;
  END IF;
END
$$;
