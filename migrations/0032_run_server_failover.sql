-- A server runs were kept on, replaced by its promoted standby (`chronicle shards promote`,
-- docs/sharding.md): the map places its shards on the standby under a newer epoch, and the old
-- server is retired. An old primary that comes back must not take writes: the first process that
-- reaches it sets it read-only (default_transaction_read_only) and records when.
ALTER TABLE run_servers
  ADD COLUMN retired_at timestamptz,
  ADD COLUMN fenced_at timestamptz;
