-- The shard map: on which PostgreSQL server each logical shard's runs are kept (docs/sharding.md).
--
-- It lives in the control database (DATABASE_URL), with the definitions, teams, tokens and shard
-- leases. An empty map is the single-database deployment: every shard's runs in the control
-- database, as before. RUN_SHARD_URLS fills it at the first start that names servers: shard s on
-- the (s mod n)-th server named. A server is known by its name, `host:port/database` of its URL.
-- Each shard's placement has an epoch, raised by every change of it, which a writer checks in the
-- transaction that writes (a shard moved or failed over refuses the old placement's writes).

CREATE TABLE run_servers (
  name      text PRIMARY KEY,
  url       text NOT NULL,
  added_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE shard_map (
  shard      integer PRIMARY KEY CHECK (shard >= 0),
  server     text NOT NULL REFERENCES run_servers (name),
  epoch      bigint NOT NULL DEFAULT 1,
  placed_at  timestamptz NOT NULL DEFAULT now()
);
