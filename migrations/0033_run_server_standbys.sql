-- A server's streaming standby, named at the first start (RUN_SHARD_STANDBY_URLS): with
-- SHARD_FAILOVER_SECONDS set, a scheduler node promotes it once the server has not answered for that
-- long, as `chronicle shards promote` does (docs/sharding.md).
ALTER TABLE run_servers ADD COLUMN standby_url text;
