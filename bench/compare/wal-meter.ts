import type { Pool } from 'pg';
import { createPool } from '@chronicle/platform';
import type { MeasuredWindow } from './measured-window';

/** What the window's WAL records say was written, per run: see WalMeter.breakdownPerRun. */
export interface WalBreakdown {
  /** Heap tuples written: inserts, updates (HOT or not) and deletes. */
  readonly heapRows: number;
  /** Of heapRows, the updates that wrote no index entry. */
  readonly hotUpdates: number;
  /** B-tree leaf entries inserted: one per index per non-HOT row version. */
  readonly indexEntries: number;
  /** WAL bytes that were full-page images (the first change of a page after a checkpoint). */
  readonly fullPageBytes: number;
  /** The record kinds that wrote most of the WAL, most first, per run: `Heap/UPDATE` and so on. */
  readonly top: ReadonlyArray<{ readonly kind: string; readonly records: number; readonly bytes: number }>;
  /**
   * The same by table or index as well, most first, per run: `events_pkey` and `Btree/INSERT_LEAF`, a
   * partition's under its partitioned table's or index's name. Where the bytes of a run go, table by table.
   */
  readonly byRelation: ReadonlyArray<{
    readonly relation: string;
    readonly kind: string;
    readonly records: number;
    readonly bytes: number;
  }>;
}

/** How many record kinds `top` names, and (relation, kind) pairs `byRelation`. */
const TOP = 10;
const TOP_BY_RELATION = 20;

/** pg_walinspect's record kinds, `resource manager/record type`, as they count in a WalBreakdown. */
const HEAP_ROWS = /^Heap\/(INSERT|UPDATE|HOT_UPDATE|DELETE)(\+INIT)?$/;
const HOT_UPDATES = /^Heap\/HOT_UPDATE(\+INIT)?$/;
const INDEX_ENTRIES = /^Btree\/(INSERT_LEAF|INSERT_POST)$/;

/**
 * The WAL written during a scenario's measured window, per run: how far
 * pg_current_wal_insert_lsn() moved between its edges. Not pg_stat_wal's
 * wal_bytes, though it counts the same records: a backend adds to it only
 * as it flushes its statistics (at most once a second while it works, up to
 * 10 s late once idle), so across a window of a few seconds it would miss
 * the window's end and gain the setup before it (measured: the 3.3 MB of a
 * backend's inserts showed there only once its next statement ended, 4 s on).
 *
 * Where the server has pg_walinspect (PostgreSQL 16 on, as the bench's own
 * server), the same stretch of WAL is read back record by record: the rows
 * and index entries the window wrote, exact and for every system alike
 * (the table statistics lag by up to a second and would mix in the setup).
 *
 * Server-wide either way: each system runs alone while measured, but
 * anything else on the server counts too (autovacuum's work included, which
 * is a cost of the runs), and a checkpoint during the window adds full-page
 * images; the min–max over repetitions shows it.
 */
export class WalMeter implements MeasuredWindow {
  private readonly pool: Pool;
  private from: string | undefined;
  private perRun: number | undefined;
  private breakdown: WalBreakdown | undefined;

  constructor(databaseUrl: string) {
    this.pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: 'bench-wal-meter' });
  }

  async open(): Promise<void> {
    const { rows } = await this.pool.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
    this.from = rows[0]!.lsn;
  }

  async close(runs: number): Promise<void> {
    if (this.from === undefined) throw new Error('WalMeter.close() before open()');
    const { rows } = await this.pool.query<{ to: string; bytes: string }>(
      `SELECT pg_current_wal_insert_lsn()::text AS to, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn) AS bytes`,
      [this.from],
    );
    this.perRun = runs > 0 ? Number(rows[0]!.bytes) / runs : undefined;
    // Read at once, before a checkpoint can recycle the window's segments.
    if (runs > 0) this.breakdown = await this.readBreakdown(this.from, rows[0]!.to, runs);
  }

  /** undefined: the scenario has no throughput window, or it did no run. */
  bytesPerRun(): number | undefined {
    return this.perRun;
  }

  /** undefined: no window, no run, or a server without pg_walinspect. */
  breakdownPerRun(): WalBreakdown | undefined {
    return this.breakdown;
  }

  end(): Promise<void> {
    return this.pool.end();
  }

  private async readBreakdown(from: string, to: string, runs: number): Promise<WalBreakdown | undefined> {
    try {
      await this.pool.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
      // Up to what is flushed: the function reads WAL files.
      const { rows } = await this.pool.query<{ kind: string; count: string; fpi: string; bytes: string }>(
        `SELECT "resource_manager/record_type" AS kind, count, fpi_size AS fpi, combined_size AS bytes
           FROM pg_get_wal_stats($1::pg_lsn, least($2::pg_lsn, pg_current_wal_flush_lsn()), true)`,
        [from, to],
      );
      // Each record under the relation of its first block (a record that touches a heap and its
      // visibility map counts once), named by the root of its partition tree.
      const { rows: relations } = await this.pool.query<{
        relation: string;
        kind: string;
        records: string;
        bytes: string;
      }>(
        `SELECT coalesce(pg_partition_root(c.oid), c.oid)::regclass::text AS relation,
                b.resource_manager || '/' || b.record_type AS kind, count(*) AS records, sum(b.record_length) AS bytes
           FROM pg_get_wal_block_info($1::pg_lsn, least($2::pg_lsn, pg_current_wal_flush_lsn()), false) b
           JOIN pg_class c ON c.relfilenode = b.relfilenode AND c.relfilenode <> 0
          WHERE b.block_id = 0 AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
          GROUP BY 1, 2 ORDER BY 4 DESC LIMIT ${TOP_BY_RELATION}`,
        [from, to],
      );
      const sum = (pattern: RegExp, of: 'count' | 'fpi'): number =>
        rows.filter((row) => pattern.test(row.kind)).reduce((total, row) => total + Number(row[of]), 0) / runs;
      return {
        heapRows: sum(HEAP_ROWS, 'count'),
        hotUpdates: sum(HOT_UPDATES, 'count'),
        indexEntries: sum(INDEX_ENTRIES, 'count'),
        fullPageBytes: sum(/./, 'fpi'),
        top: rows
          .map((row) => ({ kind: row.kind, records: Number(row.count) / runs, bytes: Number(row.bytes) / runs }))
          .sort((a, b) => b.bytes - a.bytes)
          .slice(0, TOP),
        byRelation: relations.map((r) => ({
          relation: r.relation,
          kind: r.kind,
          records: Number(r.records) / runs,
          bytes: Number(r.bytes) / runs,
        })),
      };
    } catch {
      // No pg_walinspect on this server (before PostgreSQL 16, or not installed): no breakdown.
      return undefined;
    }
  }
}
