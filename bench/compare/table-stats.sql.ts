import type { Pool } from 'pg';

/**
 * Table statistics of the database `pool` is on. They are flushed by each
 * backend asynchronously (about once a second while it works, at the
 * latest as it exits), so a read while a system runs lags it a little;
 * read after its connections are gone, they are complete.
 */

/** n_tup_hot_upd / n_tup_upd of `table`, in %: the updates that wrote no index entry. undefined: no update. */
export async function readHotUpdatePercent(pool: Pool, table: string): Promise<number | undefined> {
  const { rows } = await pool.query<{ updates: string; hot: string }>(
    `SELECT n_tup_upd AS updates, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE schemaname = 'public' AND relname = $1`,
    [table],
  );
  const updates = Number(rows[0]?.updates ?? 0);
  return updates === 0 ? undefined : (100 * Number(rows[0]!.hot)) / updates;
}

/** n_dead_tup of every table of ours: what autovacuum has yet to reclaim. */
export async function readDeadTuples(pool: Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ relname: string; dead: string }>(
    `SELECT relname, n_dead_tup AS dead FROM pg_stat_user_tables WHERE schemaname = 'public' ORDER BY relname`,
  );
  return Object.fromEntries(rows.map((row) => [row.relname, Number(row.dead)]));
}
