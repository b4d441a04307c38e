import type { Queryable } from '@chronicle/platform';

/** The revision each of these runs' rows reflects now (the primary key: one index lookup per run). */
export async function findRunRevisions(db: Queryable, runIds: readonly string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ run_id: string; revision: string }>({
    name: 'reservations_run_revisions',
    text: 'SELECT run_id, revision FROM runs WHERE run_id = ANY($1::text[])',
    values: [runIds],
  });
  return new Map(rows.map((r) => [r.run_id, Number(r.revision)]));
}
