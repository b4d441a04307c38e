import type { Queryable } from '@chronicle/platform';

export interface TokenRow {
  token_id: string;
  kind: 'admin' | 'team' | 'worker';
  team: string | null;
  queues: string[];
  expires_at: Date | null;
}

/**
 * Primary-key lookup by the token's SHA-256, of a token neither revoked nor expired; marks it used
 * (at most once a minute, in the same statement).
 */
export async function findToken(db: Queryable, tokenHash: string): Promise<TokenRow | undefined> {
  const { rows } = await db.query<TokenRow>({
    name: 'auth_find_token',
    text: `WITH found AS (
             SELECT token_hash, token_id, kind, team, queues, expires_at, last_used_at FROM api_tokens
              WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())),
           used AS (
             UPDATE api_tokens t SET last_used_at = now() FROM found f
              WHERE t.token_hash = f.token_hash AND (f.last_used_at IS NULL OR f.last_used_at < now() - interval '1 minute'))
           SELECT token_id, kind, team, queues, expires_at FROM found`,
    values: [tokenHash],
  });
  return rows[0];
}

/** A token as listings show it: never the token, nor its hash. */
export interface TokenListing {
  readonly id: string;
  readonly kind: 'team' | 'worker';
  readonly team: string | null;
  readonly queues: string[];
  readonly createdAt: Date;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
  readonly lastUsedAt: Date | null;
}

const LISTED = `token_id AS id, kind, team, queues, created_at AS "createdAt", expires_at AS "expiresAt",
  revoked_at AS "revokedAt", last_used_at AS "lastUsedAt"`;

/** A team's tokens (null: the platform worker tokens), oldest first. */
export async function listTokens(db: Queryable, team: string | null): Promise<TokenListing[]> {
  const { rows } = await db.query<TokenListing>(
    `SELECT ${LISTED} FROM api_tokens WHERE team IS NOT DISTINCT FROM $1 AND kind <> 'admin' ORDER BY created_at, token_id`,
    [team],
  );
  return rows;
}

/** The token, locked until the transaction ends; undefined when the team (null: the platform) has none by this id. */
export async function lockTokenOf(
  db: Queryable,
  team: string | null,
  tokenId: string,
): Promise<TokenListing | undefined> {
  const { rows } = await db.query<TokenListing>(
    `SELECT ${LISTED} FROM api_tokens WHERE token_id = $1 AND team IS NOT DISTINCT FROM $2 AND kind <> 'admin' FOR UPDATE`,
    [tokenId, team],
  );
  return rows[0];
}

export async function revokeToken(db: Queryable, tokenId: string): Promise<void> {
  await db.query('UPDATE api_tokens SET revoked_at = now() WHERE token_id = $1 AND revoked_at IS NULL', [tokenId]);
}

/**
 * A team's token grants the team its queues, in the same statement; a platform worker token (team
 * null) grants nothing.
 */
export async function insertToken(
  db: Queryable,
  tokenHash: string,
  tokenId: string,
  kind: 'team' | 'worker',
  team: string | null,
  queues: readonly string[],
  expiresAt: Date | null,
): Promise<void> {
  await db.query(
    `WITH token AS (INSERT INTO api_tokens (token_hash, token_id, kind, team, queues, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING team, queues)
     INSERT INTO queue_grants (queue, team) SELECT q.queue, t.team FROM token t CROSS JOIN unnest(t.queues) AS q(queue) WHERE t.team IS NOT NULL
     ON CONFLICT (queue, team) DO NOTHING`,
    [tokenHash, tokenId, kind, team, queues, expiresAt],
  );
}

export interface QueueGrant {
  readonly team: string;
  readonly weight: number;
}

/** Grant a queue to a team, or change its weight; true when the grant is new. */
export async function upsertGrant(db: Queryable, queue: string, team: string, weight: number): Promise<boolean> {
  const { rows } = await db.query<{ created: boolean }>(
    `INSERT INTO queue_grants AS g (queue, team, weight) VALUES ($1, $2, $3)
     ON CONFLICT (queue, team) DO UPDATE SET weight = EXCLUDED.weight
     RETURNING (xmax = 0) AS created`,
    [queue, team, weight],
  );
  return rows[0]?.created ?? false;
}

/** The grant, locked until the transaction ends (a weight change waits for another's); undefined: none yet. */
export async function lockGrant(db: Queryable, queue: string, team: string): Promise<QueueGrant | undefined> {
  const { rows } = await db.query<QueueGrant>(
    'SELECT team, weight FROM queue_grants WHERE queue = $1 AND team = $2 FOR UPDATE',
    [queue, team],
  );
  return rows[0];
}

export async function findGrants(db: Queryable, queue: string): Promise<QueueGrant[]> {
  const { rows } = await db.query<QueueGrant>('SELECT team, weight FROM queue_grants WHERE queue = $1 ORDER BY team', [
    queue,
  ]);
  return rows;
}

/** True when created, false when the team existed already. */
export async function insertTeam(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('INSERT INTO teams (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [id]);
  return rowCount === 1;
}

/** Serialises the creations of one team id, until the transaction ends (the row may not exist yet to lock). */
export async function lockTeamId(db: Queryable, id: string): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtextextended('team:' || $1, 0))", [id]);
}

export async function teamExists(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM teams WHERE id = $1', [id]);
  return rows.length === 1;
}
