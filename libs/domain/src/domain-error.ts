/**
 * Stable codes: the edge (apps/api's exception filter) maps each to a
 * problem type `/problems/<code>` and a status; callers branch on them.
 */
export const DOMAIN_ERROR_CODES = [
  'validation-error',
  'invalid-schedule',
  'unauthorized',
  'forbidden',
  'not-found',
  /** A run that finished longer ago than retention keeps (RETENTION_DAYS): it existed, and is gone. */
  'gone',
  'stale-lease',
  'invalid-transition',
  'not-ready',
  'concurrency-limit',
  /** With `ifDuplicate: reject`: a run of the job holds the unique key asked for (docs/api.md, "Unique runs"). */
  'duplicate-run',
  /** The run moved on while it was being decided (its row lagged the log): ask again. */
  'conflict',
  'payload-too-large',
  'quota-exceeded',
  /** A payload carries what looks like a credential (security/secret-scanner.ts). */
  'secret-in-payload',
  /** Too many attempts of something costly from one client (failed authentications): retry later. */
  'rate-limited',
  /** The server a run's shard is kept on is not reachable (docs/sharding.md): its runs wait until it is back. */
  'shard-unavailable',
] as const;

export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

/** What a refusal tells beyond its message: the field at fault, the quota and when to ask again. */
export interface DomainErrorDetails {
  readonly field?: string;
  readonly quota?: string;
  readonly retryAfterSeconds?: number;
  /** shard-unavailable: the server not reached, and the shards it keeps. */
  readonly server?: string;
  readonly shards?: readonly number[];
  /** duplicate-run: the run that holds the key. */
  readonly runId?: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly details: DomainErrorDetails = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}
