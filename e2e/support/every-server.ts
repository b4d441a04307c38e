import type { QueryResultRow } from 'pg';
import type { Queryable } from '@chronicle/platform';

/**
 * The rows of `sql` on each of `databases`, concatenated in their order: a test's read of runs or of
 * their events wherever they are kept (one database, or every server of the shard map).
 */
export async function rowsOnEvery<Row extends QueryResultRow>(
  databases: readonly Queryable[],
  sql: string,
  values: unknown[] = [],
): Promise<Row[]> {
  const answers = await Promise.all(databases.map((db) => db.query<Row>(sql, values)));
  return answers.flatMap((answer) => answer.rows);
}
