/** Injection tokens for what the runtime (libs/runtime) builds before Nest starts. */
export const CONFIG = Symbol('CONFIG');
export const LOGGER = Symbol('LOGGER');
export const PG_POOL = Symbol('PG_POOL');
export const EVENT_STORE = Symbol('EVENT_STORE');
export const ADMIN_TOKEN_HASH = Symbol('ADMIN_TOKEN_HASH');
/** The servers runs are kept on, each with its read models and its log, as the shard map places them now (RunServerDirectory; libs/event-store). */
export const RUN_SERVER_DIRECTORY = Symbol('RUN_SERVER_DIRECTORY');
export { CLOCK } from './clock/clock';
/** The process's prom-client Registry (createMetricsRegistry): what GET /metrics shows. */
export const METRICS_REGISTRY = Symbol('METRICS_REGISTRY');
