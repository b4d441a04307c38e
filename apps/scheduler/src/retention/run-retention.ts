import type { Pool, PoolClient } from 'pg';
import { SQLSTATE, sqlStateOf, type Queryable } from '@chronicle/platform';

/**
 * Retention of finished runs (issue 15, migrations/0018): `runs` and `run_listing` are partitioned by
 * the UTC day a run finished. Each pass, on one scheduler at a time:
 *
 * - moves `kept_since` (run_retention) to the first day kept, so that projections stop writing runs that
 *   finished before it;
 * - drops the day partitions before it, both tables' in one transaction, after keeping the hashes of
 *   their run ids (retired_runs: GET /v1/runs/{id} answers 410 Gone for them); dropping is the only
 *   delete of finished runs, and a live run is never in a day partition;
 * - takes the rows that landed in the default partitions (`_unsorted`: a day without its partition, as
 *   after a rebuild of older history) into their days' partitions, or retires them when their day is past;
 * - creates the partitions of yesterday to DAYS_AHEAD days ahead;
 * - deletes the retired hashes older than RETIRED_DAYS, and the large payloads (run_payloads) no run
 *   refers to that were last stored before the first day kept.
 *
 * Each table's changes wait for its lock at most LOCK_TIMEOUT_MS (a drop takes the parent's ACCESS
 * EXCLUSIVE lock for a moment); a day not done is done by a later pass.
 */
export const TABLES = ['runs', 'run_listing'] as const;
/** Partitions created ahead: a pass that does not come for a week still finds them. */
const DAYS_AHEAD = 7;
/** How long the ids of dropped runs answer 410 rather than 404. */
export const RETIRED_DAYS = 365;
const LOCK_TIMEOUT_MS = 2_000;
/** Dropped run ids per retired_runs row: 8 KB of hashes. */
const HASHES_PER_ROW = 1_000;
/** Runs retention owns: one pass at a time over all schedulers. */
const RETENTION_LOCK = 'run-retention';

export interface RetentionReport {
  readonly keptSince: string;
  readonly droppedDays: readonly string[];
  readonly retiredRuns: number;
  readonly createdDays: readonly string[];
  readonly deletedPayloads: number;
}

export class RunRetention {
  constructor(
    private readonly pool: Pool,
    private readonly retentionDays: number,
    private readonly today: () => Date = () => new Date(),
  ) {}

  /** One pass; undefined when another scheduler is in one. */
  async retainOnce(): Promise<RetentionReport | undefined> {
    const client = await this.pool.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
        [RETENTION_LOCK],
      );
      if (rows[0]?.locked !== true) return undefined;
      try {
        return await this.pass(client);
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [RETENTION_LOCK]);
      }
    } finally {
      client.release();
    }
  }

  private async pass(db: PoolClient): Promise<RetentionReport> {
    const today = utcDay(this.today());
    const keptSince = addDays(today, -this.retentionDays);
    await db.query('UPDATE run_retention SET kept_since = greatest(kept_since, $1::date)', [keptSince]);
    const droppedDays: string[] = [];
    let retiredRuns = 0;
    for (const day of await partitionDays(db, 'runs')) {
      if (day >= keptSince) continue;
      const retired = await tryLocked(db, async (tx) => {
        const count = await retire(tx, `runs_d${compact(day)}`, `finished_on = '${day}'`, today);
        for (const table of TABLES) await tx.query(`DROP TABLE IF EXISTS ${table}_d${compact(day)}`);
        return count;
      });
      if (retired === undefined) continue;
      droppedDays.push(day);
      retiredRuns += retired;
    }
    // Rows in the default partitions: past days retired, the others into partitions of their own below.
    const unsorted = await db.query<{ day: string }>(
      `SELECT DISTINCT finished_on::text AS day FROM runs_unsorted
        UNION SELECT DISTINCT finished_on::text FROM run_listing_unsorted ORDER BY 1`,
    );
    const past = unsorted.rows.map((r) => r.day).filter((day) => day < keptSince);
    if (past.length > 0) {
      const retired = await tryLocked(db, async (tx) => {
        const count = await retire(tx, 'runs_unsorted', `finished_on < '${keptSince}'`, today);
        for (const table of TABLES) await tx.query(`DELETE FROM ${table}_unsorted WHERE finished_on < $1`, [keptSince]);
        return count;
      });
      retiredRuns += retired ?? 0;
    }
    const wanted = new Set<string>(unsorted.rows.map((r) => r.day).filter((day) => day >= keptSince));
    for (let ahead = -1; ahead <= DAYS_AHEAD; ahead++) wanted.add(addDays(today, ahead));
    const existing = new Set(await partitionDays(db, 'runs'));
    const createdDays: string[] = [];
    for (const day of [...wanted].sort()) {
      if (existing.has(day)) continue;
      const soon = day <= addDays(today, 1);
      if ((await tryLocked(db, (tx) => createDay(tx, day, soon))) !== undefined) createdDays.push(day);
    }
    await db.query(`DELETE FROM retired_runs WHERE retired_on < $1::date`, [addDays(today, -RETIRED_DAYS)]);
    const { rowCount } = await db.query(
      `DELETE FROM run_payloads p
        WHERE p.stored_at < $1::date
          AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.definition ? 'payloadRef' AND r.definition->'payloadRef'->>'sha256' = p.sha256)`,
      [keptSince],
    );
    return { keptSince, droppedDays, retiredRuns, createdDays, deletedPayloads: rowCount ?? 0 };
  }
}

/**
 * The hashes of the run ids `where` selects of `table`, kept in retired_runs (sorted, in rows of
 * HASHES_PER_ROW): the same hash GET /v1/runs/{id} looks for (isRetiredRun). Resolves with their count.
 */
async function retire(tx: Queryable, table: string, where: string, today: string): Promise<number> {
  const { rows } = await tx.query<{ runs: string }>(
    `WITH hashed AS (
       SELECT h, (row_number() OVER (ORDER BY h) - 1) / ${HASHES_PER_ROW} AS chunk
         FROM (SELECT DISTINCT hashtextextended(run_id, 0) AS h FROM ${table} WHERE ${where}) x
     ), stored AS (
       INSERT INTO retired_runs (retired_on, first_hash, hashes)
       SELECT $1::date, min(h), array_agg(h ORDER BY h) FROM hashed GROUP BY chunk
       ON CONFLICT (retired_on, first_hash) DO UPDATE
          SET hashes = ARRAY(SELECT DISTINCT unnest(retired_runs.hashes || EXCLUDED.hashes) ORDER BY 1)
     )
     SELECT count(*) AS runs FROM hashed`,
    [today],
  );
  return Number(rows[0]?.runs ?? 0);
}

/**
 * A day's partitions of both tables: created apart, filled with that day's rows from the default
 * partitions (none, unless a day came without its partition), then attached, so that the default
 * partitions never hold a row of an attached day. A day that runs may be finishing on (`soon`: today,
 * tomorrow) is attached with the tables locked: a write routed by the partitions as they were would
 * otherwise land in the default partition after the attach, which it may no longer hold (23514). The
 * days ahead are created a week early, when nothing finishes on them.
 */
async function createDay(tx: Queryable, day: string, soon: boolean): Promise<true> {
  if (soon) await tx.query(`LOCK TABLE ${TABLES.join(', ')} IN ACCESS EXCLUSIVE MODE`);
  for (const table of TABLES) {
    const partition = `${table}_d${compact(day)}`;
    await tx.query(`CREATE TABLE ${partition} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
    await tx.query(`INSERT INTO ${partition} SELECT * FROM ${table}_unsorted WHERE finished_on = $1`, [day]);
    await tx.query(`DELETE FROM ${table}_unsorted WHERE finished_on = $1`, [day]);
    await tx.query(`ALTER TABLE ${table} ATTACH PARTITION ${partition} FOR VALUES IN ('${day}')`);
  }
  return true;
}

/** The days of a table's day partitions (`<table>_dYYYYMMDD`), oldest first. */
async function partitionDays(db: Queryable, table: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass ORDER BY c.relname`,
    [table],
  );
  const pattern = new RegExp(`^${table}_d(\\d{4})(\\d{2})(\\d{2})$`);
  return rows.flatMap(({ name }) => {
    const match = pattern.exec(name);
    return match === null ? [] : [`${match[1]}-${match[2]}-${match[3]}`];
  });
}

/** `work` in a transaction whose locks wait LOCK_TIMEOUT_MS at most; undefined when one did not come. */
async function tryLocked<T>(db: PoolClient, work: (tx: Queryable) => Promise<T>): Promise<T | undefined> {
  await db.query('BEGIN');
  try {
    await db.query(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
    const result = await work(db);
    await db.query('COMMIT');
    return result;
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined);
    if (sqlStateOf(err) === SQLSTATE.lockNotAvailable) return undefined;
    throw err;
  }
}

function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

function addDays(day: string, days: number): string {
  return utcDay(new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000));
}

function compact(day: string): string {
  return day.replace(/-/g, '');
}
