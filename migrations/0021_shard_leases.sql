-- Shards and their owners (docs/architecture.md, "Shards and scheduler nodes"). A job's runs and schedule belong to
-- shard chronicle_shard(job, SHARDS); scheduler nodes hold leases on shards
-- and make the scheduler's writes (materialised runs, reaped leases, overlap
-- decisions) only for the shards they hold, fenced by the lease's epoch.

-- The shard of a job: the first 32 bits of the MD5 of its name (UTF-8), as an
-- unsigned number, modulo the shard count. Its twin in TypeScript is shardOf
-- (libs/commands/src/shards/shard-of.ts); a test holds them equal.
CREATE FUNCTION chronicle_shard(job text, shards integer) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (('x' || left(md5(job), 8))::bit(32)::bigint % shards)::integer;

-- The deployment's shard count, recorded by the first scheduler node; a node
-- configured with another count refuses to start while shards are held.
CREATE TABLE shard_settings (
  only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  shards     integer NOT NULL CHECK (shards BETWEEN 1 AND 1024),
  changed_at timestamptz NOT NULL DEFAULT now()
);

-- One row per shard. owner NULL: free. epoch grows by one with every grant;
-- a write made under an older epoch is refused (the fence: a pass holds its
-- shards' rows FOR KEY SHARE while it writes, a grant takes FOR UPDATE).
CREATE TABLE shard_leases (
  shard                integer PRIMARY KEY,
  owner                text,
  epoch                bigint NOT NULL DEFAULT 0,
  lease_expires_at     timestamptz,
  granted_at           timestamptz,
  last_materialised_at timestamptz,
  last_reaped_at       timestamptz
) WITH (fillfactor = 50);

-- The scheduler nodes seen lately: shards are spread over those alive.
CREATE TABLE scheduler_nodes (
  node       text PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT now(),
  last_seen  timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 50);
