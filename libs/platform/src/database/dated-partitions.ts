import type { PoolClient } from 'pg';
import type { Queryable } from './pg-pool';
import { SQLSTATE, sqlStateOf } from './sqlstate';

/**
 * Tables LIST-partitioned by a date, one partition per value named `<prefix>YYYYMMDD`, beside a
 * default partition that catches a date without its own (so that no write ever fails): the runs'
 * days (`runs_d20261202`) and the event log's weeks (`events_w20261130`). What their retention
 * passes share.
 */

/** The dates of a table's dated partitions (`<prefix>YYYYMMDD`), oldest first. */
export async function datedPartitions(db: Queryable, table: string, prefix: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass ORDER BY c.relname`,
    [table],
  );
  const pattern = new RegExp(`^${prefix}(\\d{4})(\\d{2})(\\d{2})$`);
  return rows.flatMap(({ name }) => {
    const match = pattern.exec(name);
    return match === null ? [] : [`${match[1]}-${match[2]}-${match[3]}`];
  });
}

/** A dated partition's name: `runs_d` and 2026-12-02 -> runs_d20261202. */
export function datedPartition(prefix: string, date: string): string {
  return `${prefix}${date.replace(/-/g, '')}`;
}

/**
 * A date's partition: created apart, filled with that date's rows from the default partition (none,
 * unless the date came without its partition), then attached, so that the default partition never
 * holds a row of an attached date. A date that writes may be going to now (`soon`) is attached with
 * the table locked: a write routed by the partitions as they were would otherwise land in the default
 * partition after the attach, which it may no longer hold (23514).
 */
export async function createDatedPartition(
  tx: Queryable,
  target: DatedTable,
  date: string,
  soon: boolean,
): Promise<void> {
  const { table, column, defaultPartition } = target;
  const partition = datedPartition(target.prefix, date);
  if (soon) await tx.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  await tx.query(`CREATE TABLE ${partition} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
  await tx.query(`INSERT INTO ${partition} SELECT * FROM ${defaultPartition} WHERE ${column} = $1`, [date]);
  await tx.query(`DELETE FROM ${defaultPartition} WHERE ${column} = $1`, [date]);
  await tx.query(`ALTER TABLE ${table} ATTACH PARTITION ${partition} FOR VALUES IN ('${date}')`);
}

export interface DatedTable {
  readonly table: string;
  readonly column: string;
  readonly prefix: string;
  readonly defaultPartition: string;
}

/**
 * The partitions of a table partitioned by week (`kept_on`, 'infinity' for rows kept for ever): this
 * week's and the next `weeksAhead`, and those of weeks whose rows went to the default partition for
 * want of one. A week whose lock did not come is made by a later pass.
 */
export async function makeWeeks(
  db: PoolClient,
  target: DatedTable,
  currentWeek: string,
  weeksAhead: number,
  lockTimeoutMs: number,
): Promise<void> {
  const { rows } = await db.query<{ week: string }>(
    `SELECT DISTINCT ${target.column}::text AS week FROM ${target.defaultPartition} WHERE ${target.column} <> 'infinity'`,
  );
  const wanted = new Set(rows.map((r) => r.week));
  for (let ahead = 0; ahead <= weeksAhead; ahead++) wanted.add(addDays(currentWeek, 7 * ahead));
  const existing = new Set(await datedPartitions(db, target.table, target.prefix));
  for (const week of [...wanted].sort()) {
    if (existing.has(week)) continue;
    await tryLocked(db, lockTimeoutMs, (tx) => createDatedPartition(tx, target, week, week <= currentWeek));
  }
}

/** Fresh statistics of a partition about to be walked in key order (a sample: fractions of a second). */
export async function analyzeForWalk(db: Queryable, partition: string): Promise<void> {
  await db.query(`ANALYZE ${partition}`);
}

/**
 * `work` in a transaction whose locks wait `lockTimeoutMs` at most (a drop or an attach takes the
 * parent's ACCESS EXCLUSIVE lock for a moment); undefined when one did not come, or when the
 * transaction ended a deadlock, for a later pass.
 */
export async function tryLocked<T>(
  db: PoolClient,
  lockTimeoutMs: number,
  work: (tx: Queryable) => Promise<T>,
): Promise<T | undefined> {
  await db.query('BEGIN');
  try {
    await db.query(`SET LOCAL lock_timeout = ${lockTimeoutMs}`);
    const result = await work(db);
    await db.query('COMMIT');
    return result;
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined);
    const code = sqlStateOf(err);
    if (code === SQLSTATE.lockNotAvailable || code === SQLSTATE.deadlockDetected) return undefined;
    throw err;
  }
}

/** The UTC date of an instant, YYYY-MM-DD. */
export function utcDate(instant: Date): string {
  return instant.toISOString().slice(0, 10);
}

const DAY_MS = 86_400_000;

export function addDays(date: string, days: number): string {
  return utcDate(new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS));
}

/** The last week asked for, by its Monday's day number: the projector asks it for every run event. */
let lastWeek = { monday: NaN, date: '' };

/** The Monday of an instant's UTC week (PostgreSQL's date_trunc('week')). */
export function utcWeek(instant: Date): string {
  const day = Math.floor(instant.getTime() / DAY_MS);
  // Day 0, 1970-01-01, was a Thursday: 3 days after a Monday.
  const monday = day - ((((day + 3) % 7) + 7) % 7);
  if (monday !== lastWeek.monday) lastWeek = { monday, date: utcDate(new Date(monday * DAY_MS)) };
  return lastWeek.date;
}
