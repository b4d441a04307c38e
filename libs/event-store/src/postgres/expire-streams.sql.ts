import type { Pool, PoolClient } from 'pg';
import {
  addDays,
  analyzeForWalk,
  datedPartition,
  datedPartitions,
  makeWeeks,
  tryLocked,
  utcDate,
  type Queryable,
} from '@chronicle/platform';
import {
  EXPIRY_BATCH,
  comparePositions,
  type ExpireStreamsRequest,
  type ExpiryReport,
  type LogPosition,
} from '../event-store.port';
import { streamKey } from './stream-key';

/**
 * Retention of the PostgreSQL log (migrations/0019): `events` is partitioned by week, a stream's
 * events all in one partition. A pass, one at a time (an advisory lock in the log's database):
 *
 * 1. Makes the partitions of this week and the next WEEKS_AHEAD, and of any week whose rows went to
 *    the default partition for want of one.
 * 2. Takes each week that ended before `before` (never the current one): reads its streams in
 *    batches, asks `over` about those that end, and moves every other stream, under its lock, to
 *    the current week (one that ends and is not over yet) or to `events_kept` (one that is kept for
 *    ever: an upgraded log's first week holds them). Moving keeps every position.
 * 3. Drops the week's partition, unless an event came to it while the pass read it (a stream it
 *    took for over was written to: the week's newest event, with the log locked, is newer than the
 *    newest of the streams taken for over): then the week waits for the next pass.
 */
const WEEK = { table: 'events', column: 'kept_on', prefix: 'events_w', defaultPartition: 'events_unsorted' } as const;
const WEEKS_AHEAD = 2;
const LOCK_TIMEOUT_MS = 2_000;
/** Streams' locks are held for an append's moment: a move waits longer for them than a drop for the table. */
const MOVE_LOCK_TIMEOUT_MS = 30_000;
const EXPIRY_LOCK = 'event-log-expiry';
const KEPT = 'infinity';

export async function expireStreams(pool: Pool, request: ExpireStreamsRequest): Promise<ExpiryReport> {
  const db = await pool.connect();
  try {
    const { rows } = await db.query<{ locked: boolean }>(
      'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
      [EXPIRY_LOCK],
    );
    if (rows[0]?.locked !== true) return { expiredStreams: 0, keptStreams: 0, droppedWeeks: [] };
    try {
      return await expirePass(db, request);
    } finally {
      await db.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [EXPIRY_LOCK]);
    }
  } finally {
    db.release();
  }
}

async function expirePass(db: PoolClient, request: ExpireStreamsRequest): Promise<ExpiryReport> {
  const streamEnds = (streamId: string): boolean => streamId.startsWith(request.streamPrefix);
  const { rows } = await db.query<{ week: string; laidOut: boolean }>(
    `SELECT date_trunc('week', clock_timestamp() AT TIME ZONE 'UTC')::date::text AS week,
            es_stream_ends($1 || 'x') AS "laidOut"`,
    [request.streamPrefix],
  );
  // Only the streams es_stream_ends names begin in a week's partition: no other can go with one.
  if (rows[0]?.laidOut !== true)
    throw new Error(
      `this log keeps by week only the streams es_stream_ends names, not those starting with "${request.streamPrefix}"`,
    );
  const currentWeek = rows[0]!.week;
  await makeWeeks(db, WEEK, currentWeek, WEEKS_AHEAD, LOCK_TIMEOUT_MS);
  const before = utcDate(request.before);
  let expiredStreams = 0;
  let keptStreams = 0;
  const droppedWeeks: string[] = [];
  for (const week of await datedPartitions(db, WEEK.table, WEEK.prefix)) {
    if (week >= currentWeek || addDays(week, 7) > before) continue;
    const partition = datedPartition(WEEK.prefix, week);
    await analyzeForWalk(db, partition);
    // The newest event of the streams judged: an event after it, found when the week is locked for
    // its drop, came to a stream taken for over while the pass read the week.
    let judged: LogPosition | undefined;
    let expiredHere = 0;
    let complete = true;
    for (let after: Buffer = Buffer.alloc(0); ;) {
      const batch = await nextStreams(db, partition, after, EXPIRY_BATCH);
      if (batch.length === 0) break;
      after = batch.at(-1)!.key;
      const ids = batch.map((stream) => stream.name);
      const ending = ids.filter(streamEnds);
      // Read before they are judged: an event that comes while `over` decides is newer.
      judged = later(judged, await headOf(db, partition, ending));
      const over = ending.length === 0 ? new Set<string>() : await request.over(ending);
      const gone = ending.filter((id) => over.has(id));
      const onward = ending.filter((id) => !over.has(id));
      const forever = ids.filter((id) => !streamEnds(id));
      const moved = (await moveStreams(db, week, onward, currentWeek)) && (await moveStreams(db, week, forever, KEPT));
      // A stream not moved would go with the week: it waits for the next pass.
      if (!moved) complete = false;
      expiredHere += gone.length;
      keptStreams += onward.length;
    }
    if (!complete) continue;
    const dropped = await tryLocked(db, LOCK_TIMEOUT_MS, async (tx) => {
      // The parent first, as writers lock it: no append is in flight while the week is looked at.
      await tx.query(`LOCK TABLE ${WEEK.table} IN ACCESS EXCLUSIVE MODE`);
      const head = await headOf(tx, partition);
      if (head !== undefined && (judged === undefined || comparePositions(head, judged) > 0)) return false;
      await tx.query(`DROP TABLE ${partition}`);
      return true;
    });
    if (dropped !== true) continue;
    droppedWeeks.push(week);
    expiredStreams += expiredHere;
  }
  return { expiredStreams, keptStreams, droppedWeeks };
}

/** The newest event of a partition, or of some of its streams; undefined when there is none. */
async function headOf(
  db: Queryable,
  partition: string,
  streamIds?: readonly string[],
): Promise<LogPosition | undefined> {
  if (streamIds?.length === 0) return undefined;
  // Of streams: each one's last event by the stream index (its highest revision is its newest), where a
  // scan of the position key backwards would step over every row of other streams.
  const { rows } = await db.query<{ commit: string; prepare: string }>(
    streamIds === undefined
      ? `SELECT transaction_id::text AS commit, global_position AS prepare FROM ${partition}
          ORDER BY transaction_id DESC, global_position DESC LIMIT 1`
      : `SELECT e.transaction_id::text AS commit, e.global_position AS prepare
           FROM unnest($1::bytea[]) AS s(key)
          CROSS JOIN LATERAL (
            SELECT transaction_id, global_position FROM ${partition} p
             WHERE p.stream_key = s.key ORDER BY p.stream_revision DESC LIMIT 1
          ) e
          ORDER BY e.transaction_id DESC, e.global_position DESC LIMIT 1`,
    streamIds === undefined ? [] : [streamIds.map(streamKey)],
  );
  const row = rows[0];
  return row === undefined ? undefined : { commit: BigInt(row.commit), prepare: BigInt(row.prepare) };
}

/**
 * The streams of a partition's rows after the key `after`, in key order, each once with its name: read
 * through the partition's stream key (a row limit with that order, which PostgreSQL serves by a range
 * scan; a DISTINCT may scan the whole partition per batch). At most `rows` rows are read, so a batch
 * ends with a stream whose rows it may not all have seen: the next starts after that stream, and the
 * pass acts on whole streams by name. Analyze a partition before walking it (analyzeForWalk): with no
 * statistics (rows moved in since autovacuum last came) PostgreSQL takes it for small and scans it
 * whole per batch.
 */
export async function nextStreams(
  db: Queryable,
  partition: string,
  after: Buffer,
  rows: number,
): Promise<{ key: Buffer; name: string }[]> {
  const { rows: found } = await db.query<{ key: Buffer; name: string }>(
    `SELECT stream_key AS key, es_stream_name(stream_key) AS name FROM ${partition}
      WHERE stream_key > $1 ORDER BY stream_key LIMIT ${rows}`,
    [after],
  );
  const streams: { key: Buffer; name: string }[] = [];
  for (const stream of found) if (streams.at(-1)?.name !== stream.name) streams.push(stream);
  return streams;
}

function later(a: LogPosition | undefined, b: LogPosition | undefined): LogPosition | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return comparePositions(a, b) >= 0 ? a : b;
}

/**
 * Streams of a week to another partition, whole, under their locks (taken as es_append takes them:
 * sorted the same way, so that the two cannot deadlock): an append waits, then finds the stream's
 * head where it went and writes beside it.
 */
async function moveStreams(db: PoolClient, week: string, streamIds: readonly string[], to: string): Promise<boolean> {
  if (streamIds.length === 0) return true;
  const moved = await tryLocked(db, MOVE_LOCK_TIMEOUT_MS, async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(stream_lock_key(u.s)) FROM unnest($1::text[]) AS u(s) ORDER BY u.s`, [
      streamIds,
    ]);
    await tx.query('UPDATE events SET kept_on = $3 WHERE kept_on = $1 AND stream_key = ANY($2::bytea[])', [
      week,
      streamIds.map(streamKey),
      to,
    ]);
    return true;
  });
  return moved === true;
}
