import type { Pool } from 'pg';
import type { JsonLogger } from '@chronicle/platform';

/**
 * The tables every transition leaves a dead row version in (no HOT update: see migrations/0011): the
 * partitions of the runs (migrations/0025: a run is updated in its due day's partition, or in
 * runs_kept), and the projections' checkpoints.
 */
const HOT_TABLES = ['projection_checkpoints'];
const HOT_PARTITIONS = '^runs_(d[0-9]{8}|kept|unsorted)$';

export interface HotTablesVacuumOptions {
  /** Dead rows a table may hold beyond `deadShare` of its live rows before it is vacuumed. */
  readonly deadRows?: number;
  readonly deadShare?: number;
  /** Rows a table may change beyond `changedShare` of its rows since its last ANALYZE before it is analyzed. */
  readonly changedRows?: number;
  readonly changedShare?: number;
}

/**
 * The backstop for the server's autovacuum (and, in analyzeOnce, its autoanalyze): a hot table whose dead row
 * versions passed the threshold is vacuumed here, whether autovacuum is off
 * on the server (as on some managed and development servers) or behind.
 * When autovacuum keeps up, the check finds nothing to do. SKIP_LOCKED: a
 * table another vacuum (autovacuum, another scheduler) is on is left to it.
 * Without it, a day of churn piles dead versions at the head of the claim
 * index and every claim steps over them (npm run bench -- --soak).
 */
export class HotTablesVacuum {
  private readonly deadRows: number;
  private readonly deadShare: number;
  private readonly changedRows: number;
  private readonly changedShare: number;

  constructor(
    private readonly pool: Pool,
    private readonly logger: Pick<JsonLogger, 'info'>,
    options: HotTablesVacuumOptions = {},
  ) {
    this.deadRows = options.deadRows ?? 20_000;
    this.deadShare = options.deadShare ?? 0.05;
    this.changedRows = options.changedRows ?? 1_000;
    this.changedShare = options.changedShare ?? 0.1;
  }

  /** Vacuums the hot tables past the threshold; resolves with their names. */
  async vacuumOnce(): Promise<string[]> {
    const { rows } = await this.pool.query<{ table: string; dead: string }>({
      name: 'hot_tables_dead_rows',
      text: `SELECT relname AS table, n_dead_tup AS dead FROM pg_stat_user_tables
              WHERE schemaname = current_schema() AND (relname = ANY($1::text[]) OR relname ~ $4)
                AND n_dead_tup > $2::bigint + $3::float8 * n_live_tup`,
      values: [HOT_TABLES, this.deadRows, this.deadShare, HOT_PARTITIONS],
    });
    for (const { table, dead } of rows) {
      const started = Date.now();
      // A name from HOT_TABLES or the catalog's partitions of runs, not from input: VACUUM takes no parameters.
      await this.pool.query(`VACUUM (SKIP_LOCKED) ${table}`);
      this.logger.info('hot table vacuumed', { table, deadRows: Number(dead), ms: Date.now() - started });
    }
    return rows.map((r) => r.table);
  }

  /**
   * The statistics backstop, as vacuumOnce is autovacuum's: each table of ours (partitions included,
   * not their parents) changed past the threshold since its last ANALYZE is analyzed; resolves with
   * their names. A partition that fills without statistics (a day's finished runs, a week's events,
   * with autovacuum off) has the planner guess that a lookup of a batch of run ids matches every row,
   * and read the whole partition for it: the soak's throughput fell to a third in ten minutes so.
   */
  async analyzeOnce(): Promise<string[]> {
    const { rows } = await this.pool.query<{ table: string; quoted: string; changed: string }>({
      name: 'stale_table_statistics',
      text: `SELECT s.relname AS table, quote_ident(s.relname) AS quoted, s.n_mod_since_analyze AS changed
               FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid AND c.relkind = 'r'
              WHERE s.schemaname = current_schema() AND s.n_mod_since_analyze > $1::bigint + $2::float8 * s.n_live_tup
              ORDER BY s.relname`,
      values: [this.changedRows, this.changedShare],
    });
    for (const { table, quoted, changed } of rows) {
      const started = Date.now();
      await this.pool.query(`ANALYZE (SKIP_LOCKED) ${quoted}`);
      this.logger.info('table analyzed', { table, changedRows: Number(changed), ms: Date.now() - started });
    }
    return rows.map((r) => r.table);
  }
}
