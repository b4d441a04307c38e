-- Who may call: teams and their tokens. Tokens are stored as SHA-256 hashes;
-- the token itself is shown once, when it is issued.
CREATE TABLE teams (
  id         text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_tokens (
  token_hash text PRIMARY KEY,
  kind       text NOT NULL CHECK (kind IN ('admin', 'team', 'worker')),
  team       text REFERENCES teams (id),
  queues     text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'admin') = (team IS NULL))
);

-- Read model of job-<name> streams: the current definition of every job.
CREATE TABLE jobs (
  name       text COLLATE "C" PRIMARY KEY,
  team       text NOT NULL,
  definition jsonb NOT NULL,
  version    integer NOT NULL,
  paused     boolean NOT NULL DEFAULT false,
  -- The job stream's revision this row reflects; older events change nothing.
  revision   bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Read model of run-<id> streams. `state` is the stored state machine of
-- libs/domain/src/run/run-states.ts (ready is derived: a scheduled or retry_wait run whose
-- available_at has passed). `snapshot` is the decider's whole state, so a
-- command decides from the row and appends expecting `revision`.
CREATE TABLE runs (
  run_id           text COLLATE "C" PRIMARY KEY,
  team             text NOT NULL,
  job              text COLLATE "C" NOT NULL,
  queue            text NOT NULL,
  priority         text NOT NULL CHECK (priority IN ('critical', 'default', 'bulk')),
  state            text NOT NULL CHECK (state IN ('scheduled', 'leased', 'succeeded', 'retry_wait', 'dead', 'cancelled')),
  available_at     timestamptz NOT NULL,
  due_at           timestamptz NOT NULL,
  attempt          integer NOT NULL,
  lease_expires_at timestamptz,
  dead_at          timestamptz,
  discarded        boolean NOT NULL DEFAULT false,
  snapshot         jsonb NOT NULL,
  revision         bigint NOT NULL,
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- The claim: ready runs of a queue, oldest due first. Partial, so finished
-- runs leave the index instead of piling up at its head.
CREATE INDEX runs_claim_idx ON runs (queue, available_at) WHERE state IN ('scheduled', 'retry_wait');
-- The reaper: leases by expiry.
CREATE INDEX runs_reap_idx ON runs (lease_expires_at) WHERE state = 'leased';
-- The dead-letter view, newest first, with a stable cursor.
CREATE INDEX runs_dlq_idx ON runs (team, dead_at DESC, run_id DESC) WHERE state = 'dead' AND NOT discarded;
