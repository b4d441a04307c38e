-- A queue's cap (docs/api.md, "Dispatch: priorities, fairness, concurrency"): at most this many runs of
-- the queue leased at once, whatever their jobs and teams, beside each job's concurrency and each key's.
-- Set by the admin (PUT /v1/queues/{queue}/limits, recorded as QueueLimitsSet in the admin trail); kept in
-- the control database, as the queues' grants are. A queue without a row has no cap, and its claims count
-- nothing for it.
CREATE TABLE queue_limits (
  queue text PRIMARY KEY,
  concurrency integer NOT NULL CHECK (concurrency BETWEEN 1 AND 100000),
  set_at timestamptz NOT NULL DEFAULT now()
);

-- As in 0039, with the capped queues' locks first: each queue's, then each job's, then each job and key's,
-- each kind in name order, so two transactions taking several cannot deadlock. A queue without a cap is
-- not locked.
DROP FUNCTION lock_and_count_limits(text[], text[], text[]);
DROP FUNCTION lock_limits(text[], text[], text[]);
CREATE FUNCTION lock_limits(p_queues text[], p_jobs text[], p_key_jobs text[], p_keys text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(l.name, 0))
     FROM (SELECT 0 AS kind, 'queue-concurrency-' || q.queue AS name, q.queue AS job, '' AS key
             FROM queue_limits q WHERE q.queue = ANY (p_queues)
           UNION ALL
           SELECT 1, 'job-concurrency-' || u.job, u.job, '' FROM unnest(p_jobs) AS u(job)
           UNION ALL
           SELECT 2, 'key-concurrency-' || k.job || chr(31) || k.key, k.job, k.key
             FROM unnest(p_key_jobs, p_keys) AS k(job, key)) l
    ORDER BY l.kind, l.job COLLATE "C", l.key COLLATE "C";
END
$$;

-- As in 0039, with each capped queue's room too (kind 'queue': its cap less its runs leased here, counted
-- in run_leases, which holds the leased runs only). kind 'job': a job's run limit; 'key': a job and key's.
CREATE FUNCTION lock_and_count_limits(p_queues text[], p_jobs text[], p_key_jobs text[], p_keys text[])
RETURNS TABLE (kind text, name text, key text, room integer)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
  PERFORM lock_limits(p_queues, p_jobs, p_key_jobs, p_keys);
  RETURN QUERY
    SELECT 'queue', q.queue, NULL::text,
           q.concurrency - (SELECT count(*) FROM run_leases l WHERE l.queue = q.queue)::integer
      FROM queue_limits q WHERE q.queue = ANY (p_queues)
    UNION ALL
    SELECT 'job', j.name::text, NULL::text,
           j.run_limit - (SELECT count(*) FROM run_leases l WHERE l.job = j.name)::integer
      FROM jobs j WHERE j.name = ANY (p_jobs) AND j.run_limit IS NOT NULL
    UNION ALL
    SELECT 'key', k.job, k.key,
           coalesce(j.key_limit, 1) - (SELECT count(*) FROM run_leases l WHERE l.job = k.job AND l.concurrency_key = k.key)::integer
      FROM unnest(p_key_jobs, p_keys) AS k(job, key) LEFT JOIN jobs j ON j.name = k.job;
END
$$;
