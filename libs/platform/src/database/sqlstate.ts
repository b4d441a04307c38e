/** SQLSTATE codes we act on, by name (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
export const SQLSTATE = {
  uniqueViolation: '23505',
  untranslatableCharacter: '22P05',
  /** Text the database's encoding cannot hold: a NUL (U+0000) in a parameter, which no UTF-8 text may hold. */
  characterNotInRepertoire: '22021',
  invalidTextRepresentation: '22P02',
  programLimitExceeded: '54000',
  /** A lock not granted within lock_timeout (or NOWAIT). */
  lockNotAvailable: '55P03',
  /** The transaction was chosen to end a deadlock. */
  deadlockDetected: '40P01',
  /** Raised by es_append when a stream is not at its expected revision. */
  wrongExpectedRevision: 'ES409',
  /** Raised by a write of a run of a shard that is moving away from this server (migrations/0034). */
  shardMoving: 'SH503',
} as const;

/** The server or the connection is gone or going: the caller may try again later. */
const UNAVAILABLE_CLASSES = ['08', '53', '57P'] as const;

export function sqlStateOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.length === 5 ? code : undefined;
}

export function isUnavailable(err: unknown): boolean {
  const code = sqlStateOf(err);
  if (code !== undefined) return UNAVAILABLE_CLASSES.some((prefix) => code.startsWith(prefix));
  // Socket-level failures from the driver carry a Node error code instead.
  const nodeCode = (err as { code?: unknown } | null)?.code;
  if (typeof nodeCode === 'string' && /^E[A-Z]+/.test(nodeCode)) return true;
  const message = err instanceof Error ? err.message : '';
  // node-postgres's own words for a connection it has lost, or never had.
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|connection error and is not queryable|not queryable/i.test(
    message,
  );
}

/**
 * The refusal of SQLSTATE shardMoving, raised by our own code where the database answered with the
 * shard instead of refusing (a read of a run of a shard moving away from the server).
 */
export class ShardMovingError extends Error {
  readonly code = SQLSTATE.shardMoving;
  readonly detail: string;
  constructor(readonly shard: number) {
    super(`shard ${shard} is moving to another server: its runs are not decided here meanwhile`);
    this.name = 'ShardMovingError';
    this.detail = JSON.stringify({ shard });
  }
}
