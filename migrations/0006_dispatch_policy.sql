-- Dispatch policy: shared queues, platform workers, priorities,
-- fairness across teams, per-job concurrency.

-- A platform worker token belongs to no team: it serves every team granted
-- its queues. Team and admin tokens are as before.
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_team_check
  CHECK ((kind = 'admin' AND team IS NULL) OR (kind = 'team' AND team IS NOT NULL) OR kind = 'worker');

-- The teams a queue serves, each with its weight in the round-robin of
-- claims (2: twice the share of a team of weight 1). Issuing a team's token
-- grants it the token's queues; the admin grants more (shared queues).
CREATE TABLE queue_grants (
  queue      text NOT NULL,
  team       text NOT NULL REFERENCES teams (id),
  weight     integer NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 100),
  granted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, team)
);

INSERT INTO queue_grants (queue, team)
SELECT DISTINCT q.queue, t.team FROM api_tokens t CROSS JOIN unnest(t.queues) AS q(queue)
 WHERE t.team IS NOT NULL
ON CONFLICT DO NOTHING;

-- The claim reads, per (queue, team, priority), the oldest ready runs: one
-- short range scan each, whatever the backlog. Partial, so finished runs
-- leave the index instead of piling up at its head.
DROP INDEX runs_claim_idx;
CREATE INDEX runs_claim_idx ON runs (queue, team, priority, available_at) WHERE state IN ('scheduled', 'retry_wait');

-- Per-job concurrency: the leased runs of a job, counted by index, and its
-- ready runs, oldest first, for the claim to take up to its headroom.
CREATE INDEX runs_leased_job_idx ON runs (job) WHERE state = 'leased';
CREATE INDEX runs_ready_job_idx ON runs (job, available_at) WHERE state IN ('scheduled', 'retry_wait');

-- The jobs with a concurrency limit, by queue: the claim looks only at these.
CREATE INDEX jobs_limited_idx ON jobs (((definition->>'queue')), name) WHERE definition->>'concurrency' IS NOT NULL;
