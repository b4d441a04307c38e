import type { PoolClient } from 'pg';
import {
  addDays,
  analyzeForWalk,
  datedPartition,
  datedPartitions,
  makeWeeks,
  nextStreams,
  tryLocked,
  type DatedTable,
  type Queryable,
} from '@chronicle/platform';
import { EXPIRY_BATCH, type ExpiryReport } from '@chronicle/event-store';

/**
 * Retention of the audit trail's index (migrations/0020): `audit_events` is partitioned by the UTC
 * week of a run's event (`kept_on`; other streams' rows are kept for ever). The run retention pass,
 * after the log's, takes each week that ended before the first day kept:
 *
 * 1. reads its run streams in batches and asks `over` about them; the rows of a run not over (a dead
 *    run kept, a run retention has not dropped yet) move to the current week, as the log keeps its
 *    stream: the index keeps indexing every event the log still holds;
 * 2. drops the week, unless a row came to it while the pass read it (only the audit projection
 *    writes the index, in log order: a row newer than the week's newest when the pass began is one,
 *    as when a rebuild runs); that week waits for the next pass.
 *
 * It also makes this week's partition and the next WEEKS_AHEAD, as the log's pass does, and one for
 * each past week whose rows came to the default partition for want of one (a rebuild indexing weeks
 * already dropped): that week is then sorted out and dropped as any other.
 */
export const AUDIT_WEEKS: DatedTable = {
  table: 'audit_events',
  column: 'kept_on',
  prefix: 'audit_events_w',
  defaultPartition: 'audit_events_unsorted',
};
const WEEKS_AHEAD = 2;
const LOCK_TIMEOUT_MS = 2_000;

export async function expireAuditWeeks(
  db: PoolClient,
  request: {
    /** The Monday of the current UTC week: never dropped, and where kept rows go. */
    readonly currentWeek: string;
    /** The first day kept: a week that ended by then goes. */
    readonly before: string;
    readonly over: (streamIds: readonly string[]) => Promise<ReadonlySet<string>>;
  },
): Promise<ExpiryReport> {
  const { currentWeek, before } = request;
  await makeWeeks(db, AUDIT_WEEKS, currentWeek, WEEKS_AHEAD, LOCK_TIMEOUT_MS);
  let expiredStreams = 0;
  let keptStreams = 0;
  const droppedWeeks: string[] = [];
  for (const week of await datedPartitions(db, AUDIT_WEEKS.table, AUDIT_WEEKS.prefix)) {
    if (week >= currentWeek || addDays(week, 7) > before) continue;
    const partition = datedPartition(AUDIT_WEEKS.prefix, week);
    await analyzeForWalk(db, partition);
    const judged = await newestOf(db, partition);
    const sorted = await sortOut(db, partition, week, request);
    keptStreams += sorted.kept;
    const dropped = await tryLocked(db, LOCK_TIMEOUT_MS, async (tx) => {
      await tx.query(`LOCK TABLE ${AUDIT_WEEKS.table} IN ACCESS EXCLUSIVE MODE`);
      const newest = await newestOf(tx, partition);
      if (newest !== undefined && (judged === undefined || newest > judged)) return false;
      await tx.query(`DROP TABLE ${partition}`);
      return true;
    });
    if (dropped !== true) continue;
    droppedWeeks.push(week);
    expiredStreams += sorted.over;
  }
  return { expiredStreams, keptStreams, droppedWeeks };
}

/**
 * Reads the run streams of a week's rows in batches and asks `over` about them: the rows of streams
 * not over move to the current week (through the partitioned table, which moves a row between
 * partitions); the others stay, to go with the week.
 */
async function sortOut(
  db: PoolClient,
  partition: string,
  week: string,
  request: {
    readonly currentWeek: string;
    readonly over: (streamIds: readonly string[]) => Promise<ReadonlySet<string>>;
  },
): Promise<{ over: number; kept: number }> {
  let over = 0;
  let kept = 0;
  for (let after = ''; ;) {
    const ids = await nextStreams(db, partition, after, EXPIRY_BATCH);
    if (ids.length === 0) return { over, kept };
    after = ids.at(-1)!;
    const gone = await request.over(ids);
    const onward = ids.filter((id) => !gone.has(id));
    if (onward.length > 0)
      await db.query(
        `UPDATE ${AUDIT_WEEKS.table} SET kept_on = $3 WHERE kept_on = $1 AND stream_id = ANY($2::text[])`,
        [week, onward, request.currentWeek],
      );
    over += gone.size;
    kept += onward.length;
  }
}

/** The position of a partition's newest row (zero-padded, so that positions compare as strings). */
async function newestOf(db: Queryable, partition: string): Promise<string | undefined> {
  const { rows } = await db.query<{ at: string }>(
    `SELECT lpad(commit_position::text, 20, '0') || lpad(prepare_position::text, 20, '0') AS at
       FROM ${partition} ORDER BY commit_position DESC, prepare_position DESC LIMIT 1`,
  );
  return rows[0]?.at;
}
