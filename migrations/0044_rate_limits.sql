-- Rate limits (docs/api.md, "Rate limits"): a token bucket per job (its `rate`), per job and concurrency key
-- (its `keyRate`) and per queue (the admin's PUT /v1/queues/{queue}/limits `rate`), each `{limit, per,
-- burst}`: `limit` tokens earned each `per` (second, minute, hour or day), at most `burst` kept (`limit`
-- unless it says), one taken by each run leased. A claim leases a run only while every bucket it draws
-- from holds a token: its scan steps over the runs of an empty bucket, and it takes the buckets' locks and
-- counts their tokens again before it leases. The buckets are rows of `rate_buckets`, written after the
-- claim's append (its locks held until it commits), so every API process shares them.

-- Seconds in a rate's `per`.
CREATE FUNCTION rate_seconds(p_per text) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_per WHEN 'second' THEN 1 WHEN 'minute' THEN 60 WHEN 'hour' THEN 3600 WHEN 'day' THEN 86400 END::float8
$$;

ALTER TABLE jobs
  ADD COLUMN rate_per_second float8
    GENERATED ALWAYS AS ((definition->'rate'->>'limit')::float8 / rate_seconds(definition->'rate'->>'per')) STORED,
  ADD COLUMN rate_burst integer
    GENERATED ALWAYS AS (coalesce((definition->'rate'->>'burst')::integer, (definition->'rate'->>'limit')::integer)) STORED,
  ADD COLUMN key_rate_per_second float8
    GENERATED ALWAYS AS ((definition->'keyRate'->>'limit')::float8 / rate_seconds(definition->'keyRate'->>'per')) STORED,
  ADD COLUMN key_rate_burst integer
    GENERATED ALWAYS AS (coalesce((definition->'keyRate'->>'burst')::integer, (definition->'keyRate'->>'limit')::integer)) STORED;
-- The rated jobs of a claim's queues, read once per claim: a few rows.
CREATE INDEX jobs_rated_idx ON jobs ((definition->>'queue')) WHERE rate_per_second IS NOT NULL;

-- A queue's rate, set by the admin beside its cap (queue_limits), in the control database.
CREATE TABLE queue_rates (
  queue text PRIMARY KEY,
  "limit" integer NOT NULL CHECK ("limit" BETWEEN 1 AND 1000000),
  per text NOT NULL CHECK (per IN ('second', 'minute', 'hour', 'day')),
  burst integer NOT NULL CHECK (burst BETWEEN 1 AND 1000000),
  per_second float8 GENERATED ALWAYS AS ("limit" / rate_seconds(per)) STORED,
  set_at timestamptz NOT NULL DEFAULT now()
);

-- Each bucket's tokens as of `refilled_at`: 'job:<job>', 'key:<job><US><key>', 'queue:<queue>'. A bucket
-- without a row is full.
CREATE TABLE rate_buckets (
  name text COLLATE "C" PRIMARY KEY,
  tokens float8 NOT NULL,
  refilled_at timestamptz NOT NULL
);

-- A bucket's tokens now: those it held, and those earned since, up to its burst.
CREATE FUNCTION rate_tokens(p_name text, p_per_second float8, p_burst integer) RETURNS float8
LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT least(p_burst, b.tokens + greatest(0, extract(epoch FROM now() - b.refilled_at)) * p_per_second)
                     FROM rate_buckets b WHERE b.name = p_name), p_burst)
$$;

-- As in 0042, with a run of a concurrency key read with the room its key's rate leaves too (its job's
-- keyRate: the key's bucket's whole tokens), the smaller of the two.
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
                 SELECT least(j.key_limit - (SELECT count(*) FROM (SELECT 1 FROM run_leases l
                                                                    WHERE l.job = r.job AND l.concurrency_key = r.concurrency_key
                                                                    LIMIT j.key_limit) n)::integer,
                              CASE WHEN j.key_rate_per_second IS NOT NULL THEN
                                floor(rate_tokens('key:' || r.job || chr(31) || r.concurrency_key,
                                                  j.key_rate_per_second, j.key_rate_burst))::integer END)
                   FROM jobs j WHERE j.name = r.job) END AS key_room
          FROM ready_runs r
         WHERE r.queue = p_queue AND r.team = p_team AND r.priority = p_priority AND r.available_at <= p_until
           AND r.run_id <> ALL (p_skip_runs) AND r.job <> ALL (p_skip_jobs)
           AND (v_moving IS NULL OR chronicle_shard(r.job, v_shards) <> ALL (v_moving))
           -- An anti join with the paused jobs (a few, read once), not a probe of jobs per run read.
           AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.paused)
           AND CASE WHEN r.ordering_key IS NULL THEN true ELSE ordering_head(r.job, r.ordering_key, r.ordering_seq) END
         ORDER BY r.available_at
         OFFSET 0
      ) k
     -- A key whose job's row is not here yet (a server's copy lags) counts as having room: the claim's
     -- count under the key's lock decides (lock_and_count_limits, 1 where the job is unknown).
     WHERE k.key_room IS NULL OR k.key_room > 0
     LIMIT p_limit;
END
$$;

-- As in 0042, with each rate bucket's lock last (kind 4), by name.
DROP FUNCTION lock_and_count_limits(text[], text[], text[], text[], text[], text[]);
DROP FUNCTION lock_limits(text[], text[], text[], text[], text[], text[]);
CREATE FUNCTION lock_limits(p_queues text[], p_jobs text[], p_key_jobs text[], p_keys text[],
                            p_order_jobs text[] DEFAULT '{}', p_order_keys text[] DEFAULT '{}',
                            p_buckets text[] DEFAULT '{}') RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(l.name, 0))
     FROM (SELECT 0 AS kind, 'queue-concurrency-' || q.queue AS name, q.queue AS job, '' AS key
             FROM queue_limits q WHERE q.queue = ANY (p_queues)
           UNION ALL
           SELECT 1, 'job-concurrency-' || u.job, u.job, '' FROM unnest(p_jobs) AS u(job)
           UNION ALL
           SELECT 2, 'key-concurrency-' || k.job || chr(31) || k.key, k.job, k.key
             FROM unnest(p_key_jobs, p_keys) AS k(job, key)
           UNION ALL
           SELECT 3, 'ordering-key-' || o.job || chr(31) || o.key, o.job, o.key
             FROM unnest(p_order_jobs, p_order_keys) AS o(job, key)
           UNION ALL
           SELECT 4, 'rate-bucket-' || b.name, b.name, '' FROM unnest(p_buckets) AS b(name)) l
    ORDER BY l.kind, l.job COLLATE "C", l.key COLLATE "C";
END
$$;

-- As in 0042, and for each rate bucket named (kind 'rate'; its rate and burst given beside it) its whole
-- tokens now (room) and its exact tokens (tokens), counted once its lock is granted; `counted_at` is the
-- instant they are counted at, which the claim writes back as the bucket's refilled_at.
CREATE FUNCTION lock_and_count_limits(p_queues text[], p_jobs text[], p_key_jobs text[], p_keys text[],
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
      FROM (SELECT b.name, coalesce((SELECT least(b.burst, s.tokens + greatest(0, extract(epoch FROM v_at - s.refilled_at)) * b.per_second)
                                       FROM rate_buckets s WHERE s.name = b.name), b.burst) AS tokens
              FROM unnest(p_buckets, p_per_second, p_bursts) AS b(name, per_second, burst)) t;
END
$$;

-- When the next token of an empty bucket of these queues' jobs (rate) or of these queues comes: a lease
-- call whose ready runs are all held back by a rate waits until then, not polling meanwhile. NULL: none
-- is empty.
CREATE FUNCTION next_rate_token_at(p_queues text[]) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT min(clock_timestamp() + (1 - t.tokens) / t.per_second * interval '1 second')
    FROM (SELECT rate_tokens('job:' || j.name, j.rate_per_second, j.rate_burst) AS tokens, j.rate_per_second AS per_second
            FROM jobs j WHERE (j.definition->>'queue') = ANY (p_queues) AND j.rate_per_second IS NOT NULL
          UNION ALL
          SELECT rate_tokens('queue:' || q.queue, q.per_second, q.burst), q.per_second
            FROM queue_rates q WHERE q.queue = ANY (p_queues)) t
   WHERE t.tokens < 1
$$;

-- Each rate limit now, for the metrics: a job's (`job:<job>`) and a queue's (`queue:<queue>`) tokens, and
-- for those and a job's keys together (`key:<job>`, tokens NULL) its runs due and held back because their
-- bucket has no whole token, counted up to 10,000.
CREATE FUNCTION rate_limit_state()
RETURNS TABLE (rate_limit text, tokens float8, throttled integer)
LANGUAGE sql STABLE AS $$
  SELECT 'job:' || j.name, t.tokens,
         CASE WHEN t.tokens < 1 THEN (SELECT count(*) FROM (SELECT 1 FROM ready_runs r
                                                           WHERE r.job = j.name AND r.available_at <= now() LIMIT 10000) n)::integer
              ELSE 0 END
    FROM jobs j CROSS JOIN LATERAL (SELECT rate_tokens('job:' || j.name, j.rate_per_second, j.rate_burst) AS tokens) t
   WHERE j.rate_per_second IS NOT NULL
  UNION ALL
  SELECT 'queue:' || q.queue, t.tokens,
         CASE WHEN t.tokens < 1 THEN (SELECT count(*) FROM (SELECT 1 FROM ready_runs r
                                                           WHERE r.queue = q.queue AND r.available_at <= now() LIMIT 10000) n)::integer
              ELSE 0 END
    FROM queue_rates q CROSS JOIN LATERAL (SELECT rate_tokens('queue:' || q.queue, q.per_second, q.burst) AS tokens) t
  UNION ALL
  SELECT 'key:' || j.name, NULL::float8,
         (SELECT count(*) FROM (SELECT 1 FROM ready_runs r
                                 WHERE r.job = j.name AND r.concurrency_key IS NOT NULL AND r.available_at <= now()
                                   AND rate_tokens('key:' || r.job || chr(31) || r.concurrency_key,
                                                   j.key_rate_per_second, j.key_rate_burst) < 1
                                 LIMIT 10000) n)::integer
    FROM jobs j WHERE j.key_rate_per_second IS NOT NULL
$$;
