import type { Queryable } from '@chronicle/platform';

/** Every team's id (the control database's `teams`): the admin's listings take a page of each team's. */
export async function teamIds(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM teams ORDER BY id');
  return rows.map((r) => r.id);
}
