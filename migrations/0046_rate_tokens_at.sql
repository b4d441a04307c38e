-- A bucket's tokens at a given instant, in one place: the claim's scan counts them now (rate_tokens), and
-- lock_and_count_limits at the instant its locks were granted, which the claim writes back as the
-- bucket's refilled_at. Until here each wrote the arithmetic out.
CREATE FUNCTION rate_tokens_at(p_name text, p_per_second float8, p_burst integer, p_at timestamptz) RETURNS float8
LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT least(p_burst, b.tokens + greatest(0, extract(epoch FROM p_at - b.refilled_at)) * p_per_second)
                     FROM rate_buckets b WHERE b.name = p_name), p_burst)
$$;

CREATE OR REPLACE FUNCTION rate_tokens(p_name text, p_per_second float8, p_burst integer) RETURNS float8
LANGUAGE sql STABLE AS $$
  SELECT rate_tokens_at(p_name, p_per_second, p_burst, now())
$$;

-- As in 0044, its buckets counted by rate_tokens_at.
CREATE OR REPLACE FUNCTION lock_and_count_limits(p_queues text[], p_jobs text[], p_key_jobs text[], p_keys text[],
                                      p_order_jobs text[] DEFAULT '{}', p_order_keys text[] DEFAULT '{}',
                                      p_buckets text[] DEFAULT '{}', p_per_second float8[] DEFAULT '{}',
                                      p_bursts integer[] DEFAULT '{}')
RETURNS TABLE (kind text, name text, key text, room integer, head bigint, tokens float8, counted_at timestamptz)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
  v_at timestamptz;
BEGIN
  PERFORM lock_limits(p_queues, p_jobs, p_key_jobs, p_keys, p_order_jobs, p_order_keys, p_buckets);
  v_at := clock_timestamp();
  RETURN QUERY
    SELECT 'queue', q.queue, NULL::text,
           q.concurrency - (SELECT count(*) FROM run_leases l WHERE l.queue = q.queue)::integer, NULL::bigint,
           NULL::float8, NULL::timestamptz
      FROM queue_limits q WHERE q.queue = ANY (p_queues)
    UNION ALL
    SELECT 'job', j.name::text, NULL::text,
           j.run_limit - (SELECT count(*) FROM run_leases l WHERE l.job = j.name)::integer, NULL::bigint,
           NULL::float8, NULL::timestamptz
      FROM jobs j WHERE j.name = ANY (p_jobs) AND j.run_limit IS NOT NULL
    UNION ALL
    SELECT 'key', k.job, k.key,
           coalesce(j.key_limit, 1) - (SELECT count(*) FROM run_leases l WHERE l.job = k.job AND l.concurrency_key = k.key)::integer,
           NULL::bigint, NULL::float8, NULL::timestamptz
      FROM unnest(p_key_jobs, p_keys) AS k(job, key) LEFT JOIN jobs j ON j.name = k.job
    UNION ALL
    SELECT 'order', o.job, o.key,
           CASE WHEN EXISTS (SELECT 1 FROM run_leases l WHERE l.job = o.job AND l.ordering_key = o.key) THEN 0 ELSE 1 END,
           (SELECT min(w.ordering_seq) FROM ready_runs w
             WHERE w.job = o.job AND w.ordering_key = o.key
               AND NOT (w.state = 'retry_wait' AND w.available_at > now()
                        AND coalesce((SELECT j.ordering_skips FROM jobs j WHERE j.name = o.job), false))),
           NULL::float8, NULL::timestamptz
      FROM unnest(p_order_jobs, p_order_keys) AS o(job, key)
    UNION ALL
    SELECT 'rate', t.name, NULL::text, floor(t.tokens)::integer, NULL::bigint, t.tokens, v_at
      FROM (SELECT b.name, rate_tokens_at(b.name, b.per_second, b.burst, v_at) AS tokens
              FROM unnest(p_buckets, p_per_second, p_bursts) AS b(name, per_second, burst)) t;
END
$$;
