/** The public surface of this package: what the other packages of the repository import from it. */
export { CANARY_DEGRADED_AFTER } from './canaries';
export { CLOCK, type Clock, systemClock } from './clock/clock';
export { ConfigError } from './config/config-error';
export { type AddressRange, type Config, type LogLevel, type Role, loadConfig } from './config/config';
export { adminQuery } from './database/admin-query';
export { type CopyConnection, copyRows } from './database/copy-rows';
export { type ScratchServer, openScratchServer } from './database/scratch-server';
export {
  addDays,
  analyzeForWalk,
  createDatedPartition,
  datedPartition,
  datedPartitions,
  makeWeeks,
  tryLocked,
  utcDate,
} from './database/dated-partitions';
export { type EmbeddedPostgres, startEmbeddedPostgres } from './database/embedded-postgres';
export { migrate } from './database/migrate';
export { type Queryable, createPool, survivingConnectionLoss, withTransaction } from './database/pg-pool';
export {
  answers,
  failoverCandidates,
  type FailoverCandidate,
  fenceRetiredServers,
  placeShards,
  promoteStandby,
  type Promotion,
  readShardMap,
  runServerName,
  type RunServerAddress,
  type ShardMap,
} from './database/shard-map';
export { sqlList } from './database/sql-list';
export { SQLSTATE, ShardMovingError, isUnavailable, sqlStateOf } from './database/sqlstate';
export {
  ADMIN_TOKEN_HASH,
  CONFIG,
  EVENT_STORE,
  LOGGER,
  METRICS_REGISTRY,
  PG_POOL,
  RUN_SERVER_DIRECTORY,
} from './di-tokens';
export { findFreePort } from './free-port';
export { JsonLogger, type LoggerOptions, createLogger } from './logging/logger';
export { currentRequestContext, runInRequestContext } from './logging/request-context';
export { createMetricsRegistry } from './metrics/metrics-registry';
export { PassFailures, type PassFailuresOptions, PeriodicPass, type PeriodicPassOptions } from './periodic-pass';
export { projectRoot } from './project-root';
export { adminTokenId, bearerToken, hashToken, isAdminTokenHash, newToken, newTokenId } from './security/api-tokens';
export {
  inSpan,
  serverSpan,
  startTracing,
  traceContextOf,
  traceContextOfSpan,
  tracingOn,
  type Tracing,
} from './tracing/tracing';
export { WakeSignal, type Relay } from './wake-signal';
