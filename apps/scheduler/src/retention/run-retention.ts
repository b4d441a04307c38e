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
import { runStreamId, RUN_STREAM_PREFIX } from '@chronicle/domain';
import type { EventStore, ExpiryReport } from '@chronicle/event-store';

/**
 * Retention of finished runs (migrations/0018, 0025): `runs` and `run_listing` are partitioned by
 * the UTC day a run is due, and a run's rows stay there while it runs and when it finishes. Each pass, on
 * one scheduler at a time:
 *
 * - moves `kept_since` (run_retention) to the first day kept, so that projections stop writing runs that
 *   finished before it;
 * - takes each day before it as a whole, both tables' in one transaction: the runs that must stay (not
 *   finished: waiting, leased, dead and not discarded; or finished on or after the first day kept) move
 *   to `runs_kept` with their listing rows, the hashes of the others' ids are kept (retired_runs:
 *   GET /v1/runs/{id} answers 410 Gone for them), and the day's partitions are dropped. Dropping is the
 *   only delete on the days' partitions, where the runs run;
 * - sorts out the default partitions (`_unsorted`: a day without its partition, as a run due far ahead,
 *   or a backfill due before the first day kept) the same way for the days before the first day kept,
 *   and takes the other days into partitions of their own; and retires the kept runs that finished
 *   before the first day kept. Those few rows, off the hot partitions, go by a DELETE;
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
/**
 * How long a pass waits for a lock before it tries again at the next pass. Under PostgreSQL's
 * deadlock_timeout (1 s by default), so that where a pass and a command wait for each other (a
 * command reads a run's `runs` and `run_listing` rows, then updates the first, while a pass attaches
 * the day's partitions of one table, then of the other), the pass gives up before the deadlock
 * check could end the command's transaction instead.
 */
const LOCK_TIMEOUT_MS = 500;
/** Which of these large payloads (by SHA-256) runs kept elsewhere refer to. */
export type PayloadReferences = (sha256s: readonly string[]) => Promise<ReadonlySet<string>>;

/** A listing row `l` of a run whose payload is the payload `p`. */
const REFERS_TO_PAYLOAD = `l.definition ? 'payloadRef' AND l.definition->'payloadRef'->>'sha256' = p.sha256`;
/** Payloads looked at per pass at most. */
const PAYLOAD_BATCH = 10_000;

/** The payloads of `sha256s` the runs of the database at `db` refer to. */
export async function payloadsReferenced(db: Queryable, sha256s: readonly string[]): Promise<Set<string>> {
  const { rows } = await db.query<{ sha256: string }>(
    `SELECT DISTINCT l.definition->'payloadRef'->>'sha256' AS sha256 FROM run_listing l
      WHERE l.definition ? 'payloadRef' AND l.definition->'payloadRef'->>'sha256' = ANY($1::text[])`,
    [sha256s],
  );
  return new Set(rows.map((r) => r.sha256));
}

/** Dropped run ids per retired_runs row: 8 KB of hashes. */
const HASHES_PER_ROW = 1_000;
/**
 * A day's runs partition: 0011's settings for a table every transition writes, and 0029's room on each
 * page for the row versions transitions write beside the old ones.
 */
const HOT_PARTITION_SETTINGS =
  'autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 2000, autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02, fillfactor = 50';
/** Runs retention owns: one pass at a time over all schedulers. */
const RETENTION_LOCK = 'run-retention';

export interface RetentionReport {
  readonly keptSince: string;
  readonly droppedDays: readonly string[];
  readonly retiredRuns: number;
  /** Runs of the days dropped that stay (waiting, leased, dead and not discarded, finished since): moved to runs_kept. */
  readonly keptRuns: number;
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
    /**
     * Of large payloads no run here refers to, those the runs of other servers do (docs/sharding.md:
     * the payloads are stored in the control database, the runs on every server); it rejects when a
     * server cannot say, and then none is deleted. Without other servers, none. Null: this database
     * keeps no payloads (a run server other than the control database).
     */
    private readonly referencedElsewhere: PayloadReferences | null = async () => new Set(),
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
    let keptRuns = 0;
    for (const day of await datedPartitions(db, 'runs', 'runs_d')) {
      if (day >= keptSince) continue;
      const done = await tryLocked(db, LOCK_TIMEOUT_MS, async (tx) => {
        // The runs that must stay go to runs_kept with their listing rows; the rest go with the day.
        const kept = await keepPast(tx, `kept_on = '${day}'`, keptSince);
        const retired = await retire(tx, datedPartition('runs_d', day), 'true', today);
        for (const table of TABLES) await tx.query(`DROP TABLE IF EXISTS ${datedPartition(`${table}_d`, day)}`);
        return { kept, retired };
      });
      if (done === undefined) continue;
      droppedDays.push(day);
      retiredRuns += done.retired;
      keptRuns += done.kept;
    }
    // Rows in the default partitions (a day without its partition: a run due far ahead, or a backfill's
    // due before the first day kept): past days sorted out as a day is, the others into partitions of
    // their own below. And the kept runs that have finished since, before the first day kept. The default
    // partitions and runs_kept hold few rows: their finished ones go by a DELETE.
    const unsorted = await db.query<{ day: string }>(
      `SELECT DISTINCT kept_on::text AS day FROM runs_unsorted
        UNION SELECT DISTINCT kept_on::text FROM run_listing_unsorted ORDER BY 1`,
    );
    const sortedOut = await tryLocked(db, LOCK_TIMEOUT_MS, async (tx) => {
      const kept = await keepPast(tx, `tableoid = 'runs_unsorted'::regclass AND kept_on < '${keptSince}'`, keptSince);
      let retired = 0;
      for (const [partition, over] of [
        ['runs_unsorted', `kept_on < '${keptSince}'`],
        ['runs_kept', `finished_at < '${keptSince}'`],
      ] as const) {
        retired += await retire(tx, partition, over, today);
        await tx.query(
          `WITH gone AS (DELETE FROM ${partition} WHERE ${over} RETURNING run_id, kept_on)
           DELETE FROM run_listing l USING gone g WHERE l.kept_on = g.kept_on AND l.run_id = g.run_id`,
        );
      }
      return { kept, retired };
    });
    retiredRuns += sortedOut?.retired ?? 0;
    keptRuns += sortedOut?.kept ?? 0;
    const wanted = new Set<string>(unsorted.rows.map((r) => r.day).filter((day) => day >= keptSince));
    for (let ahead = -1; ahead <= DAYS_AHEAD; ahead++) wanted.add(addDays(today, ahead));
    const existing = new Set(await datedPartitions(db, 'runs', 'runs_d'));
    const createdDays: string[] = [];
    for (const day of [...wanted].sort()) {
      if (existing.has(day)) continue;
      const soon = day <= addDays(today, 1);
      const created = await tryLocked(db, LOCK_TIMEOUT_MS, async (tx) => {
        // Both tables at once when runs due on the day may be written (see createDatedPartition).
        if (soon) await tx.query(`LOCK TABLE ${TABLES.join(', ')} IN ACCESS EXCLUSIVE MODE`);
        for (const table of TABLES)
          await createDatedPartition(
            tx,
            { table, column: 'kept_on', prefix: `${table}_d`, defaultPartition: `${table}_unsorted` },
            day,
            false,
          );
        // Runs are updated where they are (migrations/0025): the day's partition is a hot one while its runs run.
        await tx.query(`ALTER TABLE ${datedPartition('runs_d', day)} SET (${HOT_PARTITION_SETTINGS})`);
        return true;
      });
      if (created !== undefined) createdDays.push(day);
    }
    await db.query(`DELETE FROM retired_runs WHERE retired_on < $1::date`, [addDays(today, -RETIRED_DAYS)]);
    const deletedPayloads = await this.deleteUnreferencedPayloads(db, keptSince);
    const over = (streamIds: readonly string[]): Promise<ReadonlySet<string>> => this.overRuns(streamIds);
    const log = await this.eventStore.expireStreams({
      streamPrefix: RUN_STREAM_PREFIX,
      before: new Date(`${keptSince}T00:00:00Z`),
      over,
    });
    return { keptSince, droppedDays, retiredRuns, keptRuns, createdDays, deletedPayloads, log };
  }

  /**
   * The large payloads last stored before the first day kept that no run refers to, here or on another
   * server, deleted, PAYLOAD_BATCH at a time. A payload stored again meanwhile (a new run with the same
   * body) has a newer stored_at, which the delete checks again.
   */
  private async deleteUnreferencedPayloads(db: PoolClient, keptSince: string): Promise<number> {
    if (this.referencedElsewhere === null) return 0;
    const { rows } = await db.query<{ sha256: string }>(
      `SELECT p.sha256 FROM run_payloads p
        WHERE p.stored_at < $1::date AND NOT EXISTS (SELECT 1 FROM run_listing l WHERE ${REFERS_TO_PAYLOAD})
        LIMIT ${PAYLOAD_BATCH}`,
      [keptSince],
    );
    if (rows.length === 0) return 0;
    // A server that cannot say which it refers to may refer to any: none goes this pass.
    const elsewhere = await this.referencedElsewhere(rows.map((r) => r.sha256)).catch(() => undefined);
    if (elsewhere === undefined) return 0;
    const { rowCount } = await db.query(
      `DELETE FROM run_payloads p
        WHERE p.sha256 = ANY($2::text[]) AND p.stored_at < $1::date
          AND NOT EXISTS (SELECT 1 FROM run_listing l WHERE ${REFERS_TO_PAYLOAD})`,
      [keptSince, rows.map((r) => r.sha256).filter((sha) => !elsewhere.has(sha))],
    );
    return rowCount ?? 0;
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
 * Of the rows `where` selects (days before the first day kept), those of runs that must stay move to
 * runs_kept ('infinity'), each with its listing row: a run not finished (waiting, leased, dead and not
 * discarded), or finished on or after `keptSince`. Resolves with their count.
 */
async function keepPast(tx: Queryable, where: string, keptSince: string): Promise<number> {
  const { rows } = await tx.query<{ kept: string }>(
    `WITH kept AS (
       UPDATE runs SET kept_on = 'infinity'
        WHERE ${where} AND (finished_at IS NULL OR finished_at >= $1::date)
       RETURNING run_id, due_at
     ), listed AS (
       UPDATE run_listing l SET kept_on = 'infinity' FROM kept k
        WHERE l.kept_on <> 'infinity' AND l.run_id = k.run_id AND l.due_at = k.due_at
     )
     SELECT count(*) AS kept FROM kept`,
    [keptSince],
  );
  return Number(rows[0]?.kept ?? 0);
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
