import type { Pool } from 'pg';
import { createPool } from '@chronicle/platform';
import type { MeasuredWindow } from './scenario';

/**
 * The WAL written during a scenario's measured window, per run: how far
 * pg_current_wal_insert_lsn() moved between its edges. Not pg_stat_wal's
 * wal_bytes, though it counts the same records: a backend adds to it only
 * as it flushes its statistics (at most once a second while it works, up to
 * 10 s late once idle), so across a window of a few seconds it would miss
 * the window's end and gain the setup before it (measured: the 3.3 MB of a
 * backend's inserts showed there only once its next statement ended, 4 s on).
 *
 * Server-wide either way: each system runs alone while measured, but
 * anything else on the server counts too, and a checkpoint during the
 * window adds full-page images; the min–max over repetitions shows it.
 */
export class WalMeter implements MeasuredWindow {
  private readonly pool: Pool;
  private from: string | undefined;
  private perRun: number | undefined;

  constructor(databaseUrl: string) {
    this.pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: 'bench-wal-meter' });
  }

  async open(): Promise<void> {
    const { rows } = await this.pool.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
    this.from = rows[0]!.lsn;
  }

  async close(runs: number): Promise<void> {
    if (this.from === undefined) throw new Error('WalMeter.close() before open()');
    const { rows } = await this.pool.query<{ bytes: string }>(
      'SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn) AS bytes',
      [this.from],
    );
    this.perRun = runs > 0 ? Number(rows[0]!.bytes) / runs : undefined;
  }

  /** undefined: the scenario has no throughput window, or it did no run. */
  bytesPerRun(): number | undefined {
    return this.perRun;
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}
