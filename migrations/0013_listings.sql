-- The listings of jobs and runs (GET /v1/jobs, GET /v1/runs and GraphQL's
-- jobs, runs and Job.runs), keyset-paged: newest due first for runs, by name
-- for jobs. Each page is a range scan of one index, never a sort of all rows.
--
-- The runs' order and filters are kept apart from `runs`, in `run_listing`:
-- one narrow row per run, written once when the run's row is inserted (by
-- upsertRuns, in the same statement) and never updated, since a run's team,
-- job, queue and due time never change. An index on `runs` itself would be
-- paid on every transition: a transition changes `state`, which the partial
-- indexes' predicates read, so no update of `runs` is HOT and each one adds
-- an entry to every index of the table. Here the lease, heartbeat and
-- completion of a run write nothing more than before; its enqueue writes one
-- more row and its three index entries.
CREATE TABLE run_listing (
  run_id text COLLATE "C" NOT NULL,
  team   text NOT NULL,
  job    text COLLATE "C" NOT NULL,
  queue  text NOT NULL,
  due_at timestamptz NOT NULL
);

INSERT INTO run_listing (run_id, team, job, queue, due_at) SELECT run_id, team, job, queue, due_at FROM runs;

-- No primary key: a row is written exactly when its run's row is inserted,
-- and both are emptied together (the runs projection's reset). Each listing
-- reads one of these, newest due first, and joins `runs` by its key.
CREATE INDEX run_listing_team_idx ON run_listing (team, due_at DESC, run_id DESC);
CREATE INDEX run_listing_job_idx ON run_listing (job, due_at DESC, run_id DESC);
CREATE INDEX run_listing_queue_idx ON run_listing (queue, due_at DESC, run_id DESC);
-- A job is one team's, a queue mostly: without this the planner takes a
-- team's and a queue's (or job's) rows as independent, expects few of both
-- and sorts them instead of reading one index in its order.
CREATE STATISTICS run_listing_keys (dependencies) ON team, job, queue FROM run_listing;
ANALYZE run_listing;

-- A listing of runs in a state reads `runs` itself: the waiting and leased
-- runs by the partial indexes they already have (runs_pending_idx and the
-- claim's, a sort of only those), the dead and cancelled, which pile up, by
-- these, in the listings' order. A run enters them when it dies or is
-- cancelled (and again when discarded), never when it is leased or succeeds.
CREATE INDEX runs_ended_team_idx ON runs (team, due_at DESC, run_id DESC) WHERE state IN ('dead', 'cancelled');
CREATE INDEX runs_ended_job_idx ON runs (job, due_at DESC, run_id DESC) WHERE state IN ('dead', 'cancelled');

-- Jobs by name within a team and within a queue (the admin's list of all
-- jobs is the primary key's order). Jobs change rarely: these cost little.
CREATE INDEX jobs_team_idx ON jobs (team, name);
CREATE INDEX jobs_queue_idx ON jobs (((definition->>'queue')), name);
