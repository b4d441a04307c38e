import { Pool, type PoolClient, type QueryResultRow } from 'pg';

/** Anything a query can run on: the pool, or a client inside a transaction. */
export interface Queryable {
  query<Row extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>;
  query<Row extends QueryResultRow = QueryResultRow>(config: { name?: string; text: string; values?: unknown[] }): Promise<{ rows: Row[]; rowCount: number | null }>;
}

export interface PoolOptions {
  readonly connectionString: string;
  readonly max?: number;
  readonly applicationName?: string;
}

/**
 * A pool whose sessions cannot sit idle in a transaction for long: the global
 * log read waits for the oldest open writer on the server, so a forgotten
 * transaction would stall every projection.
 */
export function createPool(options: PoolOptions): Pool {
  const pool = new Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'scheduler',
    options: '-c idle_in_transaction_session_timeout=60000',
    connectionTimeoutMillis: 10_000,
  });
  // An idle client losing its connection must not crash the process; the next
  // checkout gets a fresh one.
  pool.on('error', () => undefined);
  return pool;
}

export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
