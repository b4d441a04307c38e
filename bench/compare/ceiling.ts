import { Pool } from 'pg';
import { survivingConnectionLoss } from '@chronicle/platform';
import type { Measurement, Metric } from './scenario';

/** Writers in parallel, so commits can share WAL flushes as a busy queue's would. */
const WRITERS = 8;
const BATCH_ROWS = 100;

export const CEILING_METRICS: readonly Metric[] = [
  { key: 'singleRowCommitsPerSecond', unit: 'single-row INSERT commits/s', higherIsBetter: true },
  { key: 'batchRowsPerSecond', unit: `rows/s in ${BATCH_ROWS}-row INSERTs`, higherIsBetter: true },
];

/**
 * What this PostgreSQL server commits at all, in the same run: a plain table
 * with a job-like row, 8 writers, autocommit. Our figures and the peers' read
 * as a fraction of these.
 */
export async function measureCeiling(databaseUrl: string, seconds: number): Promise<Measurement> {
  const pool = survivingConnectionLoss(
    new Pool({ connectionString: databaseUrl, max: WRITERS, application_name: 'bench-ceiling' }),
  );
  try {
    await pool.query(
      'CREATE TABLE ceiling (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
    );
    const single = await writeFor(pool, seconds, 1, (n) => ({
      text: 'INSERT INTO ceiling (payload) VALUES ($1)',
      values: [{ n, dueAt: Date.now() }],
    }));
    const batch = await writeFor(pool, seconds, BATCH_ROWS, (n) => ({
      text: 'INSERT INTO ceiling (payload) SELECT * FROM unnest($1::jsonb[])',
      values: [Array.from({ length: BATCH_ROWS }, (_, i) => JSON.stringify({ n: n + i, dueAt: Date.now() }))],
    }));
    return { values: { singleRowCommitsPerSecond: single, batchRowsPerSecond: batch } };
  } finally {
    await pool.end();
  }
}

async function writeFor(
  pool: Pool,
  seconds: number,
  rowsPerStatement: number,
  statement: (n: number) => { text: string; values: unknown[] },
): Promise<number> {
  const deadline = Date.now() + seconds * 1000;
  let rows = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (Date.now() < deadline) {
        await pool.query(statement(rows));
        rows += rowsPerStatement;
      }
    }),
  );
  return rows / (Number(process.hrtime.bigint() - started) / 1e9);
}
