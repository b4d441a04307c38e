import type { Pool } from 'pg';

/**
 * Table statistics of the database `pool` is on. They are flushed by each
 * backend asynchronously (about once a second while it works, at the
 * latest as it exits), so a read while a system runs lags it a little;
 * read after its connections are gone, they are complete. A partitioned
 * table (runs, events, ...) has none of its own: its partitions' are summed
 * under its name.
 */

/** Each table of ours with its partitions' statistics summed into it (a partition's parent, else itself). */
const BY_TABLE = `SELECT coalesce(p.relname, s.relname) AS relname, sum(s.n_tup_upd) AS updates,
                         sum(s.n_tup_hot_upd) AS hot, sum(s.n_dead_tup) AS dead
                    FROM pg_stat_user_tables s
                    LEFT JOIN pg_inherits i ON i.inhrelid = s.relid
                    LEFT JOIN pg_class p ON p.oid = i.inhparent
                   WHERE s.schemaname = 'public'
                   GROUP BY 1`;

/** n_tup_hot_upd / n_tup_upd of `table`, in %: the updates that wrote no index entry. undefined: no update. */
export async function readHotUpdatePercent(pool: Pool, table: string): Promise<number | undefined> {
  const { rows } = await pool.query<{ updates: string; hot: string }>(
    `SELECT updates, hot FROM (${BY_TABLE}) t WHERE relname = $1`,
    [table],
  );
  const updates = Number(rows[0]?.updates ?? 0);
  return updates === 0 ? undefined : (100 * Number(rows[0]!.hot)) / updates;
}

/** n_dead_tup of every table of ours: what autovacuum has yet to reclaim. */
export async function readDeadTuples(pool: Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ relname: string; dead: string }>(
    `SELECT relname, dead FROM (${BY_TABLE}) t ORDER BY relname`,
  );
  return Object.fromEntries(rows.map((row) => [row.relname, Number(row.dead)]));
}
