import type { Pool } from 'pg';
import { createPool } from '@chronicle/platform';
import type { MeasuredWindow } from './measured-window';

/** The statements of a window, per run; see StatementMeter. */
export interface StatementCost {
  /** Top-level statements: the round trips to PostgreSQL. */
  readonly statements: number;
  /** Their execution time on the server, in µs. */
  readonly microseconds: number;
  /** The statements that took most of that time, most first. */
  readonly top: ReadonlyArray<{ readonly query: string; readonly calls: number; readonly microseconds: number }>;
}

/** How many statements `top` names. */
const TOP = 8;

/**
 * The statements PostgreSQL ran during a scenario's measured window, per run,
 * from pg_stat_statements (reset as the window opens): where the server has
 * it preloaded, as the bench's own server does. Server-wide like the WAL,
 * the bench's own polling for the unfinished count included (a statement per
 * 20 ms, well under 0.01 per run). A statement still running as the window
 * closes is counted once it ends, by the next reset: not at all.
 */
export class StatementMeter implements MeasuredWindow {
  private readonly pool: Pool;
  private available = false;
  private perRun: StatementCost | undefined;

  constructor(databaseUrl: string) {
    this.pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: 'bench-statement-meter' });
  }

  async open(): Promise<void> {
    try {
      await this.pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await this.pool.query('SELECT pg_stat_statements_reset()');
      this.available = true;
    } catch {
      // Not preloaded on this server (shared_preload_libraries): no figures.
      this.available = false;
    }
  }

  async close(runs: number): Promise<void> {
    if (!this.available || runs <= 0) return;
    const { rows } = await this.pool.query<{ calls: string | null; ms: string | null }>(
      `SELECT sum(calls) AS calls, sum(total_exec_time) AS ms FROM pg_stat_statements WHERE toplevel`,
    );
    const top = await this.pool.query<{ query: string; calls: string; ms: string }>(
      `SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query, calls, total_exec_time AS ms
         FROM pg_stat_statements WHERE toplevel ORDER BY total_exec_time DESC LIMIT ${TOP}`,
    );
    this.perRun = {
      statements: Number(rows[0]?.calls ?? 0) / runs,
      microseconds: (Number(rows[0]?.ms ?? 0) * 1000) / runs,
      top: top.rows.map((row) => ({
        query: row.query,
        calls: Number(row.calls) / runs,
        microseconds: (Number(row.ms) * 1000) / runs,
      })),
    };
  }

  /** undefined: no window, no run, or no pg_stat_statements. */
  costPerRun(): StatementCost | undefined {
    return this.perRun;
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}
