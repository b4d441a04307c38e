import { Pool, type PoolClient, type QueryResultRow } from 'pg';
import { isUnavailable } from './sqlstate';

/** Anything a query can run on: the pool, or a client inside a transaction. */
export interface Queryable {
  query<Row extends QueryResultRow = QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: Row[]; rowCount: number | null }>;
  query<Row extends QueryResultRow = QueryResultRow>(config: {
    name?: string;
    text: string;
    values?: unknown[];
  }): Promise<{ rows: Row[]; rowCount: number | null }>;
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
    // No JIT: its compile time (50-150 ms) is paid whenever the planner's estimate is high, as
    // for the claim over a million ready runs, which then runs in 8 ms without it.
    options: '-c idle_in_transaction_session_timeout=60000 -c jit=off',
    connectionTimeoutMillis: 10_000,
  });
  return survivingConnectionLoss(pool);
}

/**
 * A client losing its connection (a server restart, a database dropped WITH
 * (FORCE)) must not crash the process: idle ones are dropped by the pool, and
 * a checked-out one would emit 'error' with nobody listening between two
 * queries. The query in flight still fails, and withTransaction destroys the
 * client. Every pool the product and the bench make goes through this.
 */
export function survivingConnectionLoss<P extends Pool>(pool: P): P {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

export interface TransactionOptions {
  /**
   * The transaction's named statements run on their generic plans (plan_cache_mode, for this transaction
   * only; set with BEGIN, in the same round trip). For the hot path's statements, written for any
   * batch (arrays of ids probed by key, partitions pruned at run time): left to choose, PostgreSQL
   * planned the claim anew at every call (1.8 ms of its 6 ms), and a projection's checks often.
   */
  readonly genericPlans?: boolean;
}

const BEGIN = 'BEGIN';
const BEGIN_GENERIC = 'BEGIN; SET LOCAL plan_cache_mode = force_generic_plan';

export async function withTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query(options.genericPlans === true ? BEGIN_GENERIC : BEGIN);
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    // A connection that failed (server restart, network) is destroyed, not
    // handed to the next caller.
    broken = isUnavailable(err);
    throw err;
  } finally {
    client.release(broken);
  }
}
