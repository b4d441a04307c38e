-- Order per key (docs/api.md, "Order per key"): the runs of one job enqueued with one ordering key (an
-- account id, say) are leased one at a time, in the order they were enqueued. Each such run gets its place
-- in its key's order when it is made (next_ordering_seqs, under the key's lock), recorded in its
-- RunScheduled (`ordering.seq`), and written once to its row and to its rows in the two tables a claim
-- reads: `ready_runs`, where the key's waiting runs are found in order (ready_runs_ordering_idx) so that the
-- claim's scan leases only a key's head, and `run_leases`, where a key's leased run is found
-- (run_leases_ordering_idx). A run without a key has NULL there: no index entry, and nothing is checked.

ALTER TABLE runs ADD COLUMN ordering_key text, ADD COLUMN ordering_seq bigint;
ALTER TABLE ready_runs ADD COLUMN ordering_key text, ADD COLUMN ordering_seq bigint;
ALTER TABLE run_leases ADD COLUMN ordering_key text;
CREATE INDEX ready_runs_ordering_idx ON ready_runs (job, ordering_key, ordering_seq) WHERE ordering_key IS NOT NULL;
CREATE INDEX run_leases_ordering_idx ON run_leases (job, ordering_key) WHERE ordering_key IS NOT NULL;

-- What a failed run of an ordering key with retries left does to its key, by its job's orderingOnRetry:
-- hold (the default) keeps the key's later runs waiting until it succeeds or dies; skip lets them go on
-- while it waits for its retry, which is then leased in its turn.
ALTER TABLE jobs ADD COLUMN ordering_skips boolean
  GENERATED ALWAYS AS (coalesce(definition->>'orderingOnRetry' = 'skip', false)) STORED;

-- Whether a waiting run of an ordering key is its key's head: no run of the key is leased, and no waiting
-- run of the key came before it, but for one waiting for its retry (not due yet) when its job skips those.
-- Index probes (run_leases_ordering_idx, ready_runs_ordering_idx): the claim's scan asks it of each run
-- with a key it reads, and the claim again under the key's lock.
CREATE FUNCTION ordering_head(p_job text, p_key text, p_seq bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT NOT EXISTS (SELECT 1 FROM run_leases l WHERE l.job = p_job AND l.ordering_key = p_key)
     AND NOT EXISTS (SELECT 1 FROM ready_runs o
                      WHERE o.job = p_job AND o.ordering_key = p_key AND o.ordering_seq < p_seq
                        AND NOT (o.state = 'retry_wait' AND o.available_at > now()
                                 AND coalesce((SELECT j.ordering_skips FROM jobs j WHERE j.name = p_job), false)))
$$;

-- As in 0041, with a run of an ordering key stepped over unless it is its key's head (ordering_head).
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

-- As in 0040, with each job and ordering key's lock last (kind 3), so a claim and an enqueue that takes
-- the key's lock to number its runs (next_ordering_seqs) serialise.
DROP FUNCTION lock_and_count_limits(text[], text[], text[], text[]);
DROP FUNCTION lock_limits(text[], text[], text[], text[]);
CREATE FUNCTION lock_limits(p_queues text[], p_jobs text[], p_key_jobs text[], p_keys text[],
                            p_order_jobs text[] DEFAULT '{}', p_order_keys text[] DEFAULT '{}') RETURNS void
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
             FROM unnest(p_order_jobs, p_order_keys) AS o(job, key)) l
    ORDER BY l.kind, l.job COLLATE "C", l.key COLLATE "C";
END
$$;

-- As in 0040, and for each job and ordering key (kind 'order') the seq of its head when no run of it is
-- leased (`head`; room 1), room 0 while one is: a locked run of the key is leased only if it is that head.
CREATE FUNCTION lock_and_count_limits(p_queues text[], p_jobs text[], p_key_jobs text[], p_keys text[],
                                      p_order_jobs text[] DEFAULT '{}', p_order_keys text[] DEFAULT '{}')
RETURNS TABLE (kind text, name text, key text, room integer, head bigint)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
  PERFORM lock_limits(p_queues, p_jobs, p_key_jobs, p_keys, p_order_jobs, p_order_keys);
  RETURN QUERY
    SELECT 'queue', q.queue, NULL::text,
           q.concurrency - (SELECT count(*) FROM run_leases l WHERE l.queue = q.queue)::integer, NULL::bigint
      FROM queue_limits q WHERE q.queue = ANY (p_queues)
    UNION ALL
    SELECT 'job', j.name::text, NULL::text,
           j.run_limit - (SELECT count(*) FROM run_leases l WHERE l.job = j.name)::integer, NULL::bigint
      FROM jobs j WHERE j.name = ANY (p_jobs) AND j.run_limit IS NOT NULL
    UNION ALL
    SELECT 'key', k.job, k.key,
           coalesce(j.key_limit, 1) - (SELECT count(*) FROM run_leases l WHERE l.job = k.job AND l.concurrency_key = k.key)::integer,
           NULL::bigint
      FROM unnest(p_key_jobs, p_keys) AS k(job, key) LEFT JOIN jobs j ON j.name = k.job
    UNION ALL
    SELECT 'order', o.job, o.key,
           CASE WHEN EXISTS (SELECT 1 FROM run_leases l WHERE l.job = o.job AND l.ordering_key = o.key) THEN 0 ELSE 1 END,
           (SELECT min(w.ordering_seq) FROM ready_runs w
             WHERE w.job = o.job AND w.ordering_key = o.key
               AND NOT (w.state = 'retry_wait' AND w.available_at > now()
                        AND coalesce((SELECT j.ordering_skips FROM jobs j WHERE j.name = o.job), false)))
      FROM unnest(p_order_jobs, p_order_keys) AS o(job, key);
END
$$;

-- The places in their keys' orders of an enqueue's new runs, under the keys' locks (lock_limits, held
-- until the enqueue commits): for each job and key, the first seq to give, after every waiting run of the
-- key's and not before the database's clock in microseconds. A key's leased run was given its seq before,
-- by the same clock (or after a waiting run's), so it comes first too; a batch's runs of one key take
-- this seq and the ones after it, in the batch's order.
CREATE FUNCTION next_ordering_seqs(p_jobs text[], p_keys text[])
RETURNS TABLE (job text, key text, seq bigint)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM lock_limits('{}', '{}', '{}', '{}', p_jobs, p_keys);
  RETURN QUERY
    SELECT k.job, k.key,
           greatest(floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint,
                    coalesce((SELECT max(w.ordering_seq) FROM ready_runs w
                               WHERE w.job = k.job AND w.ordering_key = k.key), 0) + 1)
      FROM unnest(p_jobs, p_keys) AS k(job, key);
END
$$;
