import type { RateLimit } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';

/** The tables of the admin's rates (docs/api.md, "Rate limits"), by what a rate is of, keyed by that column. */
const RATE_TABLES = { queue: 'queue_rates', team: 'team_rates' } as const;

/**
 * Writes a queue's rate (queue_rates, migrations/0044) or a team's (team_rates, migrations/0045); null
 * removes it. The burst is kept whole: `limit` where the rate names none.
 */
export async function writeRate(
  db: Queryable,
  of: keyof typeof RATE_TABLES,
  name: string,
  rate: RateLimit | null,
): Promise<void> {
  const table = RATE_TABLES[of];
  if (rate === null) await db.query(`DELETE FROM ${table} WHERE ${of} = $1`, [name]);
  else
    await db.query(
      `INSERT INTO ${table} (${of}, "limit", per, burst) VALUES ($1, $2, $3, $4)
       ON CONFLICT (${of}) DO UPDATE SET "limit" = EXCLUDED."limit", per = EXCLUDED.per, burst = EXCLUDED.burst, set_at = now()`,
      [name, rate.limit, rate.per, rate.burst ?? rate.limit],
    );
}
