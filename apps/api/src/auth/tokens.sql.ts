import type { Queryable } from '../../../../libs/platform/src/database/pg-pool';

export interface TokenRow {
  kind: 'admin' | 'team' | 'worker';
  team: string | null;
  queues: string[];
}

/** Primary-key lookup by the token's SHA-256. */
export async function findToken(db: Queryable, tokenHash: string): Promise<TokenRow | undefined> {
  const { rows } = await db.query<TokenRow>('SELECT kind, team, queues FROM api_tokens WHERE token_hash = $1', [tokenHash]);
  return rows[0];
}

export async function insertToken(db: Queryable, tokenHash: string, kind: 'team' | 'worker', team: string, queues: readonly string[]): Promise<void> {
  await db.query('INSERT INTO api_tokens (token_hash, kind, team, queues) VALUES ($1, $2, $3, $4)', [tokenHash, kind, team, queues]);
}

/** True when created, false when the team existed already. */
export async function insertTeam(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('INSERT INTO teams (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [id]);
  return rowCount === 1;
}

export async function teamExists(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM teams WHERE id = $1', [id]);
  return rows.length === 1;
}
