import { loadConfig } from './config';
import { ConfigError } from './config-error';

describe('configuration', () => {
  it('defaults to embedded PostgreSQL under ./.data on port 3000 with the PostgreSQL event store', () => {
    expect(loadConfig({}, '/srv/app')).toEqual({
      port: 3000,
      databaseUrl: undefined,
      dataDir: '/srv/app/.data',
      embeddedPgPort: 0,
      pgPoolSize: 10,
      eventStore: 'postgres',
      kurrentDbConnectionString: undefined,
      logLevel: 'info',
      adminToken: undefined,
      authFailuresPerMinute: 20,
      corsOrigins: [],
      materialiseLookaheadSeconds: 60,
      priorityWeights: { critical: 70, default: 25, bulk: 5 },
      graphqlIntrospection: true,
      metricsAuth: 'none',
      retentionDays: 30,
      shards: 16,
      shardLeaseSeconds: 10,
      runShardUrls: [],
      runShardStandbyUrls: [],
      shardFailoverSeconds: 0,
      canaries: true,
      roles: ['api', 'scheduler', 'projector'],
      httpTargetAllowlist: [],
      httpTargetConcurrency: 32,
    });
  });

  it('reads the addresses HTTP-target calls may reach though reserved: addresses and CIDR ranges, v4 and v6', () => {
    expect(loadConfig({ HTTP_TARGET_ALLOWLIST: '10.1.0.0/16, 127.0.0.1,fd00::/8' }).httpTargetAllowlist).toEqual([
      { address: '10.1.0.0', prefix: 16, family: 'ipv4' },
      { address: '127.0.0.1', prefix: 32, family: 'ipv4' },
      { address: 'fd00::', prefix: 8, family: 'ipv6' },
    ]);
  });

  it('reads the servers the runs are kept on', () => {
    expect(
      loadConfig({ RUN_SHARD_URLS: 'postgres://u@a:5432/runs, postgres://u@b:5433/runs', SHARDS: '8' }).runShardUrls,
    ).toEqual(['postgres://u@a:5432/runs', 'postgres://u@b:5433/runs']);
  });

  it("reads the log's own database for a split PostgreSQL store", () => {
    expect(loadConfig({ EVENT_STORE_URL: 'postgres://log@logdb:5432/events' }, '/srv/app')).toMatchObject({
      eventStore: 'postgres',
      eventStoreUrl: 'postgres://log@logdb:5432/events',
    });
  });

  it('reads every variable', () => {
    const config = loadConfig(
      {
        PORT: '8080',
        DATABASE_URL: 'postgres://u:p@db:5432/scheduler',
        DATA_DIR: '/var/lib/scheduler',
        EMBEDDED_PG_PORT: '5499',
        PG_POOL_SIZE: '25',
        EVENT_STORE: 'kurrentdb',
        KURRENTDB_CONNECTION_STRING: 'kurrentdb://localhost:2113?tls=false',
        LOG_LEVEL: 'debug',
        PRIORITY_WEIGHTS: 'bulk=1, critical=90,default=9',
        GRAPHQL_INTROSPECTION: 'false',
        METRICS_AUTH: 'admin',
        SHARDS: '64',
        SHARD_LEASE_SECONDS: '30',
        CANARIES: 'off',
        ROLES: 'scheduler, api',
      },
      '/srv/app',
    );
    expect(config).toMatchObject({
      port: 8080,
      databaseUrl: 'postgres://u:p@db:5432/scheduler',
      dataDir: '/var/lib/scheduler',
      embeddedPgPort: 5499,
      pgPoolSize: 25,
      eventStore: 'kurrentdb',
      logLevel: 'debug',
      priorityWeights: { critical: 90, default: 9, bulk: 1 },
      graphqlIntrospection: false,
      metricsAuth: 'admin',
      shards: 64,
      shardLeaseSeconds: 30,
      canaries: false,
      roles: ['api', 'scheduler'],
    });
  });

  it.each([
    [{ DATABASE_URL: 'localhost:5432' }, /DATABASE_URL must start with postgres:\/\//],
    [{ DATABASE_URL: 'not a url' }, /DATABASE_URL is not a URL/],
    [{ DATABASE_URL: 'mysql://db/x' }, /postgres:\/\/ or postgresql:\/\//],
    [{ EVENT_STORE_URL: 'mysql://log/x' }, /EVENT_STORE_URL must start with postgres:\/\//],
    [
      {
        EVENT_STORE: 'kurrentdb',
        KURRENTDB_CONNECTION_STRING: 'kurrentdb://k:2113',
        EVENT_STORE_URL: 'postgres://log/x',
      },
      /with EVENT_STORE=kurrentdb leave it unset/,
    ],
    [{ EVENT_STORE: 'mongo' }, /EVENT_STORE must be one of postgres, kurrentdb, not "mongo"/],
    [{ EVENT_STORE: 'kurrentdb' }, /needs KURRENTDB_CONNECTION_STRING/],
    [{ PORT: '-1' }, /PORT must be a whole number from 0 to 65535/],
    [
      { HTTP_TARGET_ALLOWLIST: 'internal.example.com' },
      /HTTP_TARGET_ALLOWLIST: "internal.example.com" is not an address or a CIDR range/,
    ],
    [{ HTTP_TARGET_ALLOWLIST: '10.0.0.0/33' }, /HTTP_TARGET_ALLOWLIST: "10.0.0.0\/33"/],
    [{ HTTP_TARGET_CONCURRENCY: '-1' }, /HTTP_TARGET_CONCURRENCY must be a whole number from 0 to 1000/],
    [{ PORT: '70000' }, /PORT must be a whole number/],
    [{ PG_POOL_SIZE: '0' }, /PG_POOL_SIZE must be a whole number from 1/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
    [{ PRIORITY_WEIGHTS: 'critical=70,default=30' }, /PRIORITY_WEIGHTS must look like critical=70,default=25,bulk=5/],
    [{ GRAPHQL_INTROSPECTION: 'off' }, /GRAPHQL_INTROSPECTION must be one of true, false, not "off"/],
    [{ METRICS_AUTH: 'token' }, /METRICS_AUTH must be one of none, admin, not "token"/],
    [{ PRIORITY_WEIGHTS: 'critical=70,default=25,bulk=0' }, /PRIORITY_WEIGHTS must look like/],
    [{ PRIORITY_WEIGHTS: 'urgent=70,default=25,bulk=5' }, /PRIORITY_WEIGHTS must look like/],
    [{ SCHEDULER_ADMIN_TOKEN: 'short' }, /SCHEDULER_ADMIN_TOKEN must be at least 24 characters/],
    [
      { CORS_ORIGINS: 'https://ops.example.com/app' },
      /CORS_ORIGINS must be origins such as https:\/\/ops\.example\.com/,
    ],
    [{ CORS_ORIGINS: '*' }, /CORS_ORIGINS must be origins/],
    [{ SHARDS: '0' }, /SHARDS must be a whole number from 1 to 1024, not "0"/],
    [{ SHARDS: '16.5' }, /SHARDS must be a whole number/],
    [{ CANARIES: 'yes' }, /CANARIES must be one of on, off, not "yes"/],
    [{ ROLES: 'api,worker' }, /ROLES must name some of api, scheduler, projector, each once/],
    [{ ROLES: 'api,api' }, /ROLES must name some of api, scheduler, projector, each once/],
    [{ ROLES: ',' }, /ROLES must name some of api, scheduler, projector, each once/],
    [{ SHARD_LEASE_SECONDS: '1' }, /SHARD_LEASE_SECONDS must be a whole number from 3 to 300/],
    [{ AUTH_FAILURES_PER_MINUTE: '0' }, /AUTH_FAILURES_PER_MINUTE must be a whole number from 1/],
    [
      { RUN_SHARD_URLS: 'postgres://a/runs,mysql://b/runs' },
      /each URL of RUN_SHARD_URLS must start with postgres:\/\//,
    ],
    [{ RUN_SHARD_URLS: 'postgres://a/runs,postgres://a/runs' }, /RUN_SHARD_URLS names a server twice/],
    [{ RUN_SHARD_URLS: 'postgres://a/runs', SHARDS: '10' }, /SHARDS must be a power of two .* not 10/],
    [
      { RUN_SHARD_URLS: 'postgres://a/runs,postgres://b/runs', RUN_SHARD_STANDBY_URLS: 'postgres://a2/runs' },
      /RUN_SHARD_STANDBY_URLS names 1 standbys for the 2 servers of RUN_SHARD_URLS/,
    ],
    [{ SHARD_FAILOVER_SECONDS: '-1' }, /SHARD_FAILOVER_SECONDS must be a whole number from 0 to 3600/],
  ])('refuses %p with a message that says what to fix', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
