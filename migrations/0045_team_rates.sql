-- A team's rate (docs/api.md, "Rate limits"): at most `limit` of the team's runs leased each `per`, every
-- queue and job of the team's together, set by the admin beside the team's enqueue quotas (PUT
-- /v1/teams/{team}/quotas `leaseRate`), in the control database. Its bucket is `team:<team>` in
-- rate_buckets (migrations/0044); a team without a row has no rate.
CREATE TABLE team_rates (
  team text PRIMARY KEY,
  "limit" integer NOT NULL CHECK ("limit" BETWEEN 1 AND 1000000),
  per text NOT NULL CHECK (per IN ('second', 'minute', 'hour', 'day')),
  burst integer NOT NULL CHECK (burst BETWEEN 1 AND 1000000),
  per_second float8 GENERATED ALWAYS AS ("limit" / rate_seconds(per)) STORED,
  set_at timestamptz NOT NULL DEFAULT now()
);

-- As in 0044, with the rates of the teams these queues serve.
CREATE OR REPLACE FUNCTION next_rate_token_at(p_queues text[]) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT min(clock_timestamp() + (1 - t.tokens) / t.per_second * interval '1 second')
    FROM (SELECT rate_tokens('job:' || j.name, j.rate_per_second, j.rate_burst) AS tokens, j.rate_per_second AS per_second
            FROM jobs j WHERE (j.definition->>'queue') = ANY (p_queues) AND j.rate_per_second IS NOT NULL
          UNION ALL
          SELECT rate_tokens('queue:' || q.queue, q.per_second, q.burst), q.per_second
            FROM queue_rates q WHERE q.queue = ANY (p_queues)
          UNION ALL
          SELECT rate_tokens('team:' || r.team, r.per_second, r.burst), r.per_second
            FROM team_rates r WHERE r.team IN (SELECT g.team FROM queue_grants g WHERE g.queue = ANY (p_queues))) t
   WHERE t.tokens < 1
$$;

-- As in 0044, and each team's rate (`team:<team>`): its tokens and its runs due and held back.
CREATE OR REPLACE FUNCTION rate_limit_state()
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
  SELECT 'team:' || m.team, t.tokens,
         CASE WHEN t.tokens < 1 THEN (SELECT count(*) FROM (SELECT 1 FROM jobs j
                                                           CROSS JOIN LATERAL (SELECT 1 FROM ready_runs r
                                                                                WHERE r.job = j.name AND r.available_at <= now()
                                                                                LIMIT 10000) x
                                                           WHERE j.team = m.team LIMIT 10000) n)::integer
              ELSE 0 END
    FROM team_rates m CROSS JOIN LATERAL (SELECT rate_tokens('team:' || m.team, m.per_second, m.burst) AS tokens) t
  UNION ALL
  SELECT 'key:' || j.name, NULL::float8,
         (SELECT count(*) FROM (SELECT 1 FROM ready_runs r
                                 WHERE r.job = j.name AND r.concurrency_key IS NOT NULL AND r.available_at <= now()
                                   AND rate_tokens('key:' || r.job || chr(31) || r.concurrency_key,
                                                   j.key_rate_per_second, j.key_rate_burst) < 1
                                 LIMIT 10000) n)::integer
    FROM jobs j WHERE j.key_rate_per_second IS NOT NULL
$$;
