import type { Pool, PoolClient } from 'pg';
import {
  addDays,
  createDatedPartition,
  datedPartition,
  datedPartitions,
  tryLocked,
  utcDate,
  type Queryable,
} from '@chronicle/platform';
import { retiredRunIds } from '@chronicle/commands';
import { runStreamId } from '@chronicle/domain';
import type { EventStore, ExpiryReport } from '@chronicle/event-store';

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
 *   refers to that were last stored before the first day kept;
 * - then the log's side (EventStore.expireStreams): the streams of runs begun before the first day kept
 *   go when their runs are over, that is retired (their ids' hashes in retired_runs) and without a row
 *   (not written again since). A run the read models do not know of yet (a projector behind) is kept.
 *   The audit trail of runs is the log itself: it goes with the log.
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
  readonly log: ExpiryReport;
}

export class RunRetention {
  constructor(
    private readonly pool: Pool,
    private readonly eventStore: EventStore,
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
    const today = utcDate(this.today());
    const keptSince = addDays(today, -this.retentionDays);
    await db.query('UPDATE run_retention SET kept_since = greatest(kept_since, $1::date)', [keptSince]);
    const droppedDays: string[] = [];
    let retiredRuns = 0;
    for (const day of await datedPartitions(db, 'runs', 'runs_d')) {
      if (day >= keptSince) continue;
      const retired = await tryLocked(db, LOCK_TIMEOUT_MS, async (tx) => {
        const count = await retire(tx, datedPartition('runs_d', day), `finished_on = '${day}'`, today);
        for (const table of TABLES) await tx.query(`DROP TABLE IF EXISTS ${datedPartition(`${table}_d`, day)}`);
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
      const retired = await tryLocked(db, LOCK_TIMEOUT_MS, async (tx) => {
        const count = await retire(tx, 'runs_unsorted', `finished_on < '${keptSince}'`, today);
        for (const table of TABLES) await tx.query(`DELETE FROM ${table}_unsorted WHERE finished_on < $1`, [keptSince]);
        return count;
      });
      retiredRuns += retired ?? 0;
    }
    const wanted = new Set<string>(unsorted.rows.map((r) => r.day).filter((day) => day >= keptSince));
    for (let ahead = -1; ahead <= DAYS_AHEAD; ahead++) wanted.add(addDays(today, ahead));
    const existing = new Set(await datedPartitions(db, 'runs', 'runs_d'));
    const createdDays: string[] = [];
    for (const day of [...wanted].sort()) {
      if (existing.has(day)) continue;
      const soon = day <= addDays(today, 1);
      const created = await tryLocked(db, LOCK_TIMEOUT_MS, async (tx) => {
        // Both tables at once when runs may be finishing on the day (see createDatedPartition).
        if (soon) await tx.query(`LOCK TABLE ${TABLES.join(', ')} IN ACCESS EXCLUSIVE MODE`);
        for (const table of TABLES)
          await createDatedPartition(
            tx,
            { table, column: 'finished_on', prefix: `${table}_d`, defaultPartition: `${table}_unsorted` },
            day,
            false,
          );
        return true;
      });
      if (created !== undefined) createdDays.push(day);
    }
    await db.query(`DELETE FROM retired_runs WHERE retired_on < $1::date`, [addDays(today, -RETIRED_DAYS)]);
    const { rowCount } = await db.query(
      `DELETE FROM run_payloads p
        WHERE p.stored_at < $1::date
          AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.definition ? 'payloadRef' AND r.definition->'payloadRef'->>'sha256' = p.sha256)`,
      [keptSince],
    );
    const over = (streamIds: readonly string[]): Promise<ReadonlySet<string>> => this.overRuns(streamIds);
    const log = await this.eventStore.expireStreams({ before: new Date(`${keptSince}T00:00:00Z`), over });
    return { keptSince, droppedDays, retiredRuns, createdDays, deletedPayloads: rowCount ?? 0, log };
  }

  /** The run streams whose runs retention dropped, and that have no row again. */
  private async overRuns(streamIds: readonly string[]): Promise<ReadonlySet<string>> {
    const prefix = runStreamId('');
    const runIds = streamIds.filter((id) => id.startsWith(prefix)).map((id) => id.slice(prefix.length));
    const { rows } = await this.pool.query<{ run_id: string }>(
      'SELECT run_id FROM runs WHERE run_id = ANY($1::text[])',
      [runIds],
    );
    const present = new Set(rows.map((r) => r.run_id));
    const retired = await retiredRunIds(
      this.pool,
      runIds.filter((id) => !present.has(id)),
    );
    return new Set([...retired].map(runStreamId));
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
