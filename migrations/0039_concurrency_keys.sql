-- Concurrency per key (docs/api.md, "Dispatch: priorities, fairness, concurrency"): a run enqueued with a
-- concurrency key (a customer id, say) is leased only while fewer than its job's perKeyConcurrency runs of
-- the same job and key are leased. The key is written once, when the run is made, to its row and to its
-- rows in the two tables a claim reads: `ready_runs`, so that the claim's scan can step over the runs of a
-- key that is full, and `run_leases`, so that the runs of a key leased now are counted in one range of an
-- index. A run without a key has NULL there: no index entry, and the claim checks nothing for it.

ALTER TABLE runs ADD COLUMN concurrency_key text;
ALTER TABLE ready_runs ADD COLUMN concurrency_key text;
ALTER TABLE run_leases ADD COLUMN concurrency_key text;
CREATE INDEX run_leases_key_idx ON run_leases (job, concurrency_key) WHERE concurrency_key IS NOT NULL;

-- How many runs of one key a job lets be leased at once: its perKeyConcurrency, 1 where it names none.
ALTER TABLE jobs ADD COLUMN key_limit integer
  GENERATED ALWAYS AS (coalesce((definition->>'perKeyConcurrency')::integer, 1)) STORED;

-- As in 0034, and each run with a key read with the room its key has left (key_room: its job's key_limit
-- less the runs of the job and key leased now: run_leases_key_idx, counted up to the limit, so a key costs
-- at most that many index entries); a run whose key has none is stepped over, as a run of a job at its
-- limit is. NULL for a run without a key, which costs nothing more than before.
DROP FUNCTION ready_runs_of(text, text, text, timestamptz, text[], text[], integer);
CREATE FUNCTION ready_runs_of(
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
      ) k
     -- A key whose job's row is not here yet (a server's copy lags) counts as having room: the claim's
     -- count under the key's lock decides (lock_and_count_limits, 1 where the job is unknown).
     WHERE k.key_room IS NULL OR k.key_room > 0
     LIMIT p_limit;
END
$$;


-- The locks that serialise the decisions counted against a limit: each job's (its concurrency), then each
-- job and key's (its perKeyConcurrency), each kind in name order, so two transactions taking several cannot
-- deadlock. Transaction-scoped advisory locks: they write nothing, so es_append may still come after them.
CREATE FUNCTION lock_limits(p_jobs text[], p_key_jobs text[], p_keys text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(l.name, 0))
     FROM (SELECT 0 AS kind, 'job-concurrency-' || u.job AS name, u.job, '' AS key FROM unnest(p_jobs) AS u(job)
           UNION ALL
           SELECT 1, 'key-concurrency-' || k.job || chr(31) || k.key, k.job, k.key
             FROM unnest(p_key_jobs, p_keys) AS k(job, key)) l
    ORDER BY l.kind, l.job COLLATE "C", l.key COLLATE "C";
END
$$;

-- A claim's check of its runs against their limits, in one round trip: the locks (lock_limits), then, in a
-- statement of its own whose snapshot is taken once they are granted, the room each job with a run limit
-- and each key has left (key NULL: the job's). Every claim committed before the locks were granted is seen.
CREATE FUNCTION lock_and_count_limits(p_jobs text[], p_key_jobs text[], p_keys text[])
RETURNS TABLE (job text, key text, room integer)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
  PERFORM lock_limits(p_jobs, p_key_jobs, p_keys);
  RETURN QUERY
    SELECT j.name::text, NULL::text, j.run_limit - (SELECT count(*) FROM run_leases l WHERE l.job = j.name)::integer
      FROM jobs j WHERE j.name = ANY (p_jobs) AND j.run_limit IS NOT NULL
    UNION ALL
    SELECT k.job, k.key,
           coalesce(j.key_limit, 1) - (SELECT count(*) FROM run_leases l WHERE l.job = k.job AND l.concurrency_key = k.key)::integer
      FROM unnest(p_key_jobs, p_keys) AS k(job, key) LEFT JOIN jobs j ON j.name = k.job;
END
$$;
