-- Bulk operations (docs/api.md, "Bulk operations"): cancel runs, pause or resume jobs, replay or discard
-- dead runs, every one a filter selects, in batches, stoppable and resumable. An operation's row is in the
-- control database; the API process that runs it saves it after each batch (its cursor per server, its
-- counts, its heartbeat), and a process whose operation's heartbeat went stale has died: another takes it
-- over (SELECT ... FOR UPDATE SKIP LOCKED, libs/commands/src/bulk/bulk-operations.sql.ts). The statuses and
-- actions mirror libs/domain/src/bulk/bulk-vocabulary.ts (bulk-operations.sql.int-spec.ts checks them).
CREATE TABLE bulk_operations (
  -- bulk_ and 32 hex digits, the creation time first: newest first is by id.
  id text COLLATE "C" PRIMARY KEY,
  -- The team acted on; null: the admin's operation over every team.
  team text,
  actor text NOT NULL,
  action text NOT NULL CHECK (action IN ('cancel-runs', 'pause-jobs', 'resume-jobs', 'replay-dead', 'discard-dead')),
  filter jsonb NOT NULL,
  -- When its selection was taken: the runs and jobs it holds are those that matched then.
  snapshot_at timestamptz NOT NULL,
  -- Per server (its name in the shard map, `control` without one): the last target done, and how many it holds.
  cursors jsonb NOT NULL,
  matched integer NOT NULL,
  processed integer NOT NULL DEFAULT 0,
  acted integer NOT NULL DEFAULT 0,
  skipped integer NOT NULL DEFAULT 0,
  status text NOT NULL CHECK (status IN ('running', 'stopping', 'stopped', 'done', 'failed')),
  -- The process working through it (`host:pid#instance`), null while none does; heartbeat_at: its last save.
  owner text,
  heartbeat_at timestamptz,
  error text,
  -- The request that started it: the events it causes carry its id as their correlationId.
  correlation_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);

-- A team's listing, newest first (the admin's of every team reads the primary key backwards).
CREATE INDEX bulk_operations_team_idx ON bulk_operations (team, id DESC);
-- What a process looks for to take over: the operations under way (a few), by heartbeat.
CREATE INDEX bulk_operations_live_idx ON bulk_operations (heartbeat_at NULLS FIRST) WHERE status IN ('running', 'stopping');

-- An operation's selection, taken when it starts: the run ids (on the runs' servers, each its own runs) or
-- job names (in the control database) it holds, walked in order by the operation's cursor. Runs made after
-- the snapshot are not in it, and none is in it twice. Deleted when the operation is done.
CREATE TABLE bulk_operation_targets (
  operation_id text COLLATE "C" NOT NULL,
  target text COLLATE "C" NOT NULL,
  PRIMARY KEY (operation_id, target)
);
