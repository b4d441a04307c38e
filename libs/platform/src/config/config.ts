import { isIP } from 'node:net';
import * as path from 'node:path';
import { DEFAULT_PRIORITY_WEIGHTS, type PriorityWeights } from '@chronicle/domain';
import { ConfigError } from './config-error';

export type EventStoreKind = 'postgres' | 'kurrentdb';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** Who may read GET /metrics: anyone who reaches the port, or the admin token's holder. */
export type MetricsAuth = 'none' | 'admin';
/** What a process does; `npm start` runs the ROLES given, all three by default. */
export type Role = 'api' | 'scheduler' | 'projector';
export const ROLES: readonly Role[] = ['api', 'scheduler', 'projector'];

export interface Config {
  readonly port: number;
  /** Unset: embedded PostgreSQL under `dataDir`. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly embeddedPgPort: number;
  readonly pgPoolSize: number;
  readonly eventStore: EventStoreKind;
  /**
   * With EVENT_STORE=postgres: the log's own database, apart from the read models' (no shared
   * transaction: the product runs the protocol it runs on KurrentDB). Unset: the log is in the read
   * models' database.
   */
  readonly eventStoreUrl: string | undefined;
  readonly kurrentDbConnectionString: string | undefined;
  readonly logLevel: LogLevel;
  /** Unset: generated in embedded mode (kept in DATA_DIR), none otherwise. */
  readonly adminToken: string | undefined;
  /** How far ahead the materialiser appends scheduled runs. */
  readonly materialiseLookaheadSeconds: number;
  /** The claims' shares of the priorities that have ready runs. */
  readonly priorityWeights: PriorityWeights;
  /** Whether POST /graphql answers introspection queries (`__schema`, `__type`). */
  readonly graphqlIntrospection: boolean;
  /** `admin`: GET /metrics takes the admin token, as admin calls do. */
  readonly metricsAuth: MetricsAuth;
  /** Origins a browser may call the API from (CORS); none: no cross-origin calls. */
  readonly corsOrigins: readonly string[];
  /** Failed authentications a client address may make a minute before it waits (429). */
  readonly authFailuresPerMinute: number;
  /** Days a finished run is kept after the day it finished; then its day's partitions are dropped. */
  readonly retentionDays: number;
  /** Shards the runs and schedules are spread over (`hash(job) mod shards`); fixed per deployment. */
  readonly shards: number;
  /** How long a scheduler node's hold on a shard lasts unless renewed; another node takes it after. */
  readonly shardLeaseSeconds: number;
  /**
   * The PostgreSQL servers the shards' runs are placed on at first start (docs/sharding.md); the
   * shard map in the control database (DATABASE_URL) holds where they are after. Empty: every run in
   * the control database.
   */
  readonly runShardUrls: readonly string[];
  /** Each RUN_SHARD_URLS server's streaming standby, by position (none: ''), promoted by failover. */
  readonly runShardStandbyUrls: readonly string[];
  /** A server not answering this long has its standby promoted by a scheduler node; 0: only by an operator. */
  readonly shardFailoverSeconds: number;
  /** A synthetic run per shard every minute, done by a built-in worker and checked by the shard's owner. */
  readonly canaries: boolean;
  /** The roles `npm start` runs in its one process (the role entry points run theirs alone). */
  readonly roles: readonly Role[];
  /**
   * Addresses HTTP-target calls may reach although they are loopback, private, link-local or another
   * reserved range (docs/operations.md, "HTTP targets"): addresses and CIDR ranges, checked after DNS.
   */
  readonly httpTargetAllowlist: readonly AddressRange[];
  /** HTTP-target calls each API process makes at once; 0: it makes none. */
  readonly httpTargetConcurrency: number;
}

/** An address (prefix: its whole length) or a CIDR range. */
export interface AddressRange {
  readonly address: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}

/**
 * Every environment variable the processes read, with its default; the table in docs/operations.md,
 * "Configuration", mirrors this.
 */
export const CONFIG_VARIABLES = {
  PORT: '3000',
  DATABASE_URL: '(unset: embedded PostgreSQL)',
  DATA_DIR: './.data',
  EMBEDDED_PG_PORT: '0 (any free port)',
  PG_POOL_SIZE: '10',
  EVENT_STORE: 'postgres',
  KURRENTDB_CONNECTION_STRING: '(unset)',
  LOG_LEVEL: 'info',
  SCHEDULER_ADMIN_TOKEN: '(unset: generated in embedded mode)',
  MATERIALISE_LOOKAHEAD_SECONDS: '60',
  PRIORITY_WEIGHTS: 'critical=70,default=25,bulk=5',
  GRAPHQL_INTROSPECTION: 'true',
  METRICS_AUTH: 'none',
  RETENTION_DAYS: '30',
  SHARDS: '16',
  SHARD_LEASE_SECONDS: '10',
  RUN_SHARD_URLS: '(unset: runs in the control database)',
  RUN_SHARD_STANDBY_URLS: '(unset: no standbys)',
  SHARD_FAILOVER_SECONDS: '0 (failover by an operator only)',
  CANARIES: 'on',
  ROLES: 'api,scheduler,projector',
  HTTP_TARGET_ALLOWLIST: '(unset: public addresses only)',
  HTTP_TARGET_CONCURRENCY: '32',
} as const;

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  const eventStore = parseChoice(env, 'EVENT_STORE', ['postgres', 'kurrentdb'] as const, 'postgres');
  const kurrentDbConnectionString = nonEmpty(env['KURRENTDB_CONNECTION_STRING']);
  if (eventStore === 'kurrentdb' && kurrentDbConnectionString === undefined) {
    throw new ConfigError(
      'EVENT_STORE=kurrentdb needs KURRENTDB_CONNECTION_STRING (for example kurrentdb://localhost:2113?tls=false)',
    );
  }
  const eventStoreUrl = parseDatabaseUrl(nonEmpty(env['EVENT_STORE_URL']), 'EVENT_STORE_URL');
  if (eventStoreUrl !== undefined && eventStore !== 'postgres') {
    throw new ConfigError(
      "EVENT_STORE_URL is the PostgreSQL log's database; with EVENT_STORE=kurrentdb leave it unset",
    );
  }
  const shards = parseInteger(env, 'SHARDS', 16, 1, 1024);
  return {
    port: parseInteger(env, 'PORT', 3000, 0, 65535),
    databaseUrl: parseDatabaseUrl(nonEmpty(env['DATABASE_URL'])),
    dataDir: path.resolve(cwd, nonEmpty(env['DATA_DIR']) ?? '.data'),
    embeddedPgPort: parseInteger(env, 'EMBEDDED_PG_PORT', 0, 0, 65535),
    pgPoolSize: parseInteger(env, 'PG_POOL_SIZE', 10, 1, 500),
    eventStore,
    eventStoreUrl,
    kurrentDbConnectionString,
    logLevel: parseChoice(env, 'LOG_LEVEL', ['debug', 'info', 'warn', 'error'] as const, 'info'),
    adminToken: parseAdminToken(nonEmpty(env['SCHEDULER_ADMIN_TOKEN'])),
    materialiseLookaheadSeconds: parseInteger(env, 'MATERIALISE_LOOKAHEAD_SECONDS', 60, 1, 3600),
    priorityWeights: parsePriorityWeights(nonEmpty(env['PRIORITY_WEIGHTS'])),
    graphqlIntrospection: parseChoice(env, 'GRAPHQL_INTROSPECTION', ['true', 'false'] as const, 'true') === 'true',
    metricsAuth: parseChoice(env, 'METRICS_AUTH', ['none', 'admin'] as const, 'none'),
    authFailuresPerMinute: parseInteger(env, 'AUTH_FAILURES_PER_MINUTE', 20, 1, 100_000),
    corsOrigins: parseOrigins(nonEmpty(env['CORS_ORIGINS'])),
    retentionDays: parseInteger(env, 'RETENTION_DAYS', 30, 1, 36_500),
    shards,
    shardLeaseSeconds: parseInteger(env, 'SHARD_LEASE_SECONDS', 10, 3, 300),
    runShardUrls: parseRunShardUrls(nonEmpty(env['RUN_SHARD_URLS']), shards),
    runShardStandbyUrls: parseStandbyUrls(nonEmpty(env['RUN_SHARD_STANDBY_URLS']), nonEmpty(env['RUN_SHARD_URLS'])),
    shardFailoverSeconds: parseInteger(env, 'SHARD_FAILOVER_SECONDS', 0, 0, 3600),
    canaries: parseChoice(env, 'CANARIES', ['on', 'off'] as const, 'on') === 'on',
    roles: parseRoles(nonEmpty(env['ROLES'])),
    httpTargetAllowlist: parseAddressRanges(nonEmpty(env['HTTP_TARGET_ALLOWLIST']), 'HTTP_TARGET_ALLOWLIST'),
    httpTargetConcurrency: parseInteger(env, 'HTTP_TARGET_CONCURRENCY', 32, 0, 1000),
  };
}

/** `10.1.2.0/24,127.0.0.1,fd00::/8`: addresses and CIDR ranges, IPv4 or IPv6. */
function parseAddressRanges(raw: string | undefined, name: string): readonly AddressRange[] {
  if (raw === undefined) return [];
  return raw.split(',').map((entry) => {
    const [address = '', prefixText, extra] = entry.trim().split('/');
    const version = isIP(address);
    const bits = version === 6 ? 128 : 32;
    const prefix = prefixText === undefined ? bits : Number(prefixText);
    if (version === 0 || extra !== undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > bits)
      throw new ConfigError(`${name}: "${entry.trim()}" is not an address or a CIDR range such as 10.0.0.0/8`);
    return { address, prefix, family: version === 6 ? 'ipv6' : 'ipv4' };
  });
}

/** `api,scheduler`: some of the three roles, each once, in any order; the process runs them in ROLES' order. */
function parseRoles(raw: string | undefined): readonly Role[] {
  if (raw === undefined) return ROLES;
  const named = raw.split(',').map((role) => role.trim().toLowerCase());
  const unknown = named.filter((role) => !ROLES.includes(role as Role));
  if (named.length === 0 || unknown.length > 0 || new Set(named).size !== named.length)
    throw new ConfigError(`ROLES must name some of ${ROLES.join(', ')}, each once, comma-separated, not "${raw}"`);
  return ROLES.filter((role) => named.includes(role));
}

/** `critical=70,default=25,bulk=5`: each priority once, whole numbers from 1 to 1000. */
function parsePriorityWeights(raw: string | undefined): PriorityWeights {
  if (raw === undefined) return DEFAULT_PRIORITY_WEIGHTS;
  const bad = (): ConfigError =>
    new ConfigError(
      `PRIORITY_WEIGHTS must look like critical=70,default=25,bulk=5 (each from 1 to 1000), not "${raw}"`,
    );
  const pairs = raw.split(',').map((pair) => /^\s*(critical|default|bulk)\s*=\s*(\d{1,4})\s*$/.exec(pair));
  if (pairs.some((m) => m === null)) throw bad();
  const weights = Object.fromEntries(pairs.map((m) => [m![1]!, Number(m![2])]));
  const { critical, default: normal, bulk } = weights;
  if (pairs.length !== 3 || [critical, normal, bulk].some((w) => w === undefined || w < 1 || w > 1000)) throw bad();
  return { critical: critical!, default: normal!, bulk: bulk! };
}

/** `https://ops.example.com,https://admin.example.com`: each an origin (scheme, host, port), no path. */
function parseOrigins(raw: string | undefined): readonly string[] {
  if (raw === undefined) return [];
  const origins = raw.split(',').map((o) => o.trim());
  for (const origin of origins)
    if (!/^https?:\/\/[^/\s]+$/.test(origin))
      throw new ConfigError(
        `CORS_ORIGINS must be origins such as https://ops.example.com, comma-separated, not "${origin}"`,
      );
  return origins;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function parseDatabaseUrl(value: string | undefined, name = 'DATABASE_URL'): string | undefined {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name} is not a URL; expected postgres://user:password@host:5432/database`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(`${name} must start with postgres:// or postgresql://, not ${url.protocol}//`);
  }
  if (url.hostname === '' && !url.searchParams.has('host')) {
    throw new ConfigError(`${name} has no host; expected postgres://user:password@host:5432/database`);
  }
  return value;
}

/**
 * `postgres://a/db,postgres://b/db`: each a PostgreSQL URL, each once. A run id names its job's slot
 * (one of 4,096), so the shards a run can be found by need a count that divides them: a power of two.
 */
function parseRunShardUrls(raw: string | undefined, shards: number): readonly string[] {
  if (raw === undefined) return [];
  const urls = raw.split(',').map((url) => parseDatabaseUrl(url.trim(), 'each URL of RUN_SHARD_URLS')!);
  if (new Set(urls).size !== urls.length) throw new ConfigError('RUN_SHARD_URLS names a server twice');
  if (4096 % shards !== 0)
    throw new ConfigError(
      `with RUN_SHARD_URLS, SHARDS must be a power of two (it divides the 4096 slots run ids name), not ${shards}`,
    );
  return urls;
}

/** `,postgres://b-standby/db`: by position, each RUN_SHARD_URLS server's standby, or nothing. */
function parseStandbyUrls(raw: string | undefined, servers: string | undefined): readonly string[] {
  if (raw === undefined) return [];
  const urls = raw.split(',').map((url) => url.trim());
  const count = servers?.split(',').length ?? 0;
  if (urls.length !== count)
    throw new ConfigError(
      `RUN_SHARD_STANDBY_URLS names ${urls.length} standbys for the ${count} servers of RUN_SHARD_URLS: one per server, by position, empty for none`,
    );
  return urls.map((url) => (url === '' ? '' : parseDatabaseUrl(url, 'each URL of RUN_SHARD_STANDBY_URLS')!));
}

function parseAdminToken(value: string | undefined): string | undefined {
  if (value !== undefined && value.length < 24)
    throw new ConfigError('SCHEDULER_ADMIN_TOKEN must be at least 24 characters long');
  return value;
}

function parseInteger(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, not "${raw}"`);
  }
  return Number(raw);
}

function parseChoice<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return fallback;
  const choice = choices.find((c) => c === raw.toLowerCase());
  if (choice === undefined) {
    throw new ConfigError(`${name} must be one of ${choices.join(', ')}, not "${raw}"`);
  }
  return choice;
}
