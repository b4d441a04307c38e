-- As in 0039, with the scan kept a subquery of its own (OFFSET 0): flattened into the outer query, the
-- room of each run with a key was computed for each of its uses (the filter's two and the result's), three
-- probes of jobs and run_leases where one is needed. Nothing changes for a run without a key.
CREATE OR REPLACE FUNCTION ready_runs_of(
  p_queue text, p_team text, p_priority text,
  p_until timestamptz,
  p_skip_runs text[], p_skip_jobs text[],
  p_limit integer)
RETURNS TABLE (run_id text, job text, team text, priority text, available_at timestamptz,
               concurrency_key text, key_room integer)
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
SET enable_seqscan = off
SET enable_sort = off
AS $$
DECLARE
  v_moving integer[];
  v_shards integer;
BEGIN
  SELECT array_agg(m.shard), max(m.shards) INTO v_moving, v_shards FROM moving_shards m;
  RETURN QUERY
    SELECT k.run_id, k.job, k.team, k.priority, k.available_at, k.concurrency_key, k.key_room
      FROM (
        SELECT r.run_id::text, r.job::text, r.team, r.priority, r.available_at, r.concurrency_key,
               CASE WHEN r.concurrency_key IS NOT NULL THEN (
                 SELECT j.key_limit - (SELECT count(*) FROM (SELECT 1 FROM run_leases l
                                                              WHERE l.job = r.job AND l.concurrency_key = r.concurrency_key
                                                              LIMIT j.key_limit) n)::integer
                   FROM jobs j WHERE j.name = r.job) END AS key_room
          FROM ready_runs r
         WHERE r.queue = p_queue AND r.team = p_team AND r.priority = p_priority AND r.available_at <= p_until
           AND r.run_id <> ALL (p_skip_runs) AND r.job <> ALL (p_skip_jobs)
           AND (v_moving IS NULL OR chronicle_shard(r.job, v_shards) <> ALL (v_moving))
           -- An anti join with the paused jobs (a few, read once), not a probe of jobs per run read.
           AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.paused)
         ORDER BY r.available_at
         OFFSET 0
      ) k
     -- A key whose job's row is not here yet (a server's copy lags) counts as having room: the claim's
     -- count under the key's lock decides (lock_and_count_limits, 1 where the job is unknown).
     WHERE k.key_room IS NULL OR k.key_room > 0
     LIMIT p_limit;
END
$$;
