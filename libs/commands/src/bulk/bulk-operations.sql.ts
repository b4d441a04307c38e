import type { BulkAction, BulkFilter, BulkStatus } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { sqlValues } from '../listings/sql-values';

/** Where an operation is on one server: the last target done, how many the server held, whether it is through. */
export interface ServerCursor {
  readonly after: string | null;
  readonly matched: number;
  readonly done: boolean;
}

/** A row of bulk_operations (migrations/0048), in the control database. */
export interface BulkOperationRow {
  readonly id: string;
  readonly team: string | null;
  readonly actor: string;
  readonly action: BulkAction;
  readonly filter: BulkFilter;
  readonly snapshot_at: Date;
  /** By server name. */
  readonly cursors: Readonly<Record<string, ServerCursor>>;
  readonly matched: number;
  readonly processed: number;
  readonly acted: number;
  readonly skipped: number;
  readonly status: BulkStatus;
  readonly owner: string | null;
  readonly heartbeat_at: Date | null;
  readonly error: string | null;
  readonly correlation_id: string | null;
  readonly created_at: Date;
  readonly updated_at: Date;
  readonly finished_at: Date | null;
}

/** The counts an operation saves after each batch. */
export interface BulkCounts {
  readonly processed: number;
  readonly acted: number;
  readonly skipped: number;
}

/** A new operation, running, held by the process that started it (`owner`) from the start. */
export async function insertOperation(
  db: Queryable,
  row: Pick<
    BulkOperationRow,
    'id' | 'team' | 'actor' | 'action' | 'filter' | 'snapshot_at' | 'cursors' | 'matched' | 'owner' | 'correlation_id'
  >,
): Promise<BulkOperationRow> {
  const { rows } = await db.query<BulkOperationRow>({
    text: `INSERT INTO bulk_operations (id, team, actor, action, filter, snapshot_at, cursors, matched, status, owner,
                                        heartbeat_at, correlation_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9, now(), $10)
           RETURNING *`,
    values: [
      row.id,
      row.team,
      row.actor,
      row.action,
      JSON.stringify(row.filter),
      row.snapshot_at,
      JSON.stringify(row.cursors),
      row.matched,
      row.owner,
      row.correlation_id,
    ],
  });
  return rows[0]!;
}

export async function findOperation(db: Queryable, id: string): Promise<BulkOperationRow | undefined> {
  const { rows } = await db.query<BulkOperationRow>({
    name: 'bulk_find_operation',
    text: 'SELECT * FROM bulk_operations WHERE id = $1',
    values: [id],
  });
  return rows[0];
}

/**
 * A page of operations, newest first (ids begin with their creation time), after the id `after`: a
 * team's by bulk_operations_team_idx, every team's (the admin's) by the primary key read backwards.
 */
export async function listOperations(
  db: Queryable,
  query: { team: string | undefined; status: BulkStatus | undefined; after: string | undefined; limit: number },
): Promise<BulkOperationRow[]> {
  const { values, param } = sqlValues();
  const conditions: string[] = [];
  if (query.team !== undefined) conditions.push(`team = ${param(query.team)}`);
  if (query.status !== undefined) conditions.push(`status = ${param(query.status)}`);
  if (query.after !== undefined) conditions.push(`id < ${param(query.after)}`);
  const { rows } = await db.query<BulkOperationRow>({
    text: `SELECT * FROM bulk_operations ${conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`}
            ORDER BY id DESC LIMIT ${param(query.limit)}`,
    values,
  });
  return rows;
}

/**
 * One operation under way that no live process holds (never taken, released, or its holder's heartbeat
 * older than `staleSeconds`: that process died), taken by `owner`. SKIP LOCKED: processes looking at once
 * take different ones, and none waits for another's look.
 */
export async function claimOperation(
  db: Queryable,
  owner: string,
  staleSeconds: number,
  skip: readonly string[],
): Promise<BulkOperationRow | undefined> {
  const { rows } = await db.query<BulkOperationRow>({
    name: 'bulk_claim_operation',
    text: `UPDATE bulk_operations o SET owner = $1, heartbeat_at = now(), updated_at = now()
            WHERE o.id = (SELECT c.id FROM bulk_operations c
                           WHERE c.status IN ('running', 'stopping')
                             AND (c.owner IS NULL OR c.heartbeat_at < now() - make_interval(secs => $2))
                             AND c.id <> ALL ($3::text[])
                           ORDER BY c.heartbeat_at NULLS FIRST
                           LIMIT 1
                             FOR UPDATE SKIP LOCKED)
            RETURNING o.*`,
    values: [owner, staleSeconds, skip],
  });
  return rows[0];
}

/**
 * A batch's progress, saved by the operation's holder (and only while it holds it: another process that
 * took it over meanwhile holds it now). Answers the status (stopping: asked to stop), or undefined when
 * `owner` no longer holds it.
 */
export async function saveProgress(
  db: Queryable,
  id: string,
  owner: string,
  cursors: Readonly<Record<string, ServerCursor>>,
  counts: BulkCounts,
): Promise<BulkStatus | undefined> {
  const { rows } = await db.query<{ status: BulkStatus }>({
    name: 'bulk_save_progress',
    text: `UPDATE bulk_operations
              SET cursors = $3, processed = $4, acted = $5, skipped = $6, heartbeat_at = now(), updated_at = now()
            WHERE id = $1 AND owner = $2
            RETURNING status`,
    values: [id, owner, JSON.stringify(cursors), counts.processed, counts.acted, counts.skipped],
  });
  return rows[0]?.status;
}

/** The holder is alive: its heartbeat, between saves (a batch that waits long on locks is not taken for dead). */
export async function touchOperation(db: Queryable, id: string, owner: string): Promise<void> {
  await db.query({
    name: 'bulk_touch_operation',
    text: 'UPDATE bulk_operations SET heartbeat_at = now() WHERE id = $1 AND owner = $2',
    values: [id, owner],
  });
}

/** The holder lets go: done, stopped, failed (with its error), or still running for another process to take. */
export async function releaseOperation(
  db: Queryable,
  id: string,
  owner: string,
  status: Extract<BulkStatus, 'running' | 'stopped' | 'done' | 'failed'>,
  error: string | null = null,
): Promise<BulkOperationRow | undefined> {
  const { rows } = await db.query<BulkOperationRow>({
    text: `UPDATE bulk_operations
              SET status = $3, owner = NULL, error = $4, updated_at = now(),
                  finished_at = CASE WHEN $3 IN ('done', 'failed') THEN now() END
            WHERE id = $1 AND owner = $2
            RETURNING *`,
    values: [id, owner, status, error],
  });
  return rows[0];
}

/** The operation, locked until the transaction ends: a stop or resume decides from it. */
export async function lockOperation(db: Queryable, id: string): Promise<BulkOperationRow | undefined> {
  const { rows } = await db.query<BulkOperationRow>({
    text: 'SELECT * FROM bulk_operations WHERE id = $1 FOR UPDATE',
    values: [id],
  });
  return rows[0];
}

/**
 * :stop, once decided: a live holder is asked to stop (stopping: it stops after its batch); without one
 * (none took it yet, or its holder died) it is stopped at once.
 */
export async function stopOperation(db: Queryable, id: string, staleSeconds: number): Promise<BulkOperationRow> {
  const { rows } = await db.query<BulkOperationRow>({
    text: `UPDATE bulk_operations
              SET status = CASE WHEN held THEN 'stopping' ELSE 'stopped' END,
                  owner = CASE WHEN held THEN owner END, updated_at = now()
             FROM (SELECT owner IS NOT NULL AND heartbeat_at >= now() - make_interval(secs => $2) AS held
                     FROM bulk_operations WHERE id = $1) h
            WHERE id = $1
            RETURNING bulk_operations.*`,
    values: [id, staleSeconds],
  });
  return rows[0]!;
}

/** :resume, once decided: running again; its holder goes on (it was stopping), or a process takes it up. */
export async function resumeOperation(db: Queryable, id: string): Promise<BulkOperationRow> {
  const { rows } = await db.query<BulkOperationRow>({
    text: `UPDATE bulk_operations SET status = 'running', error = NULL, finished_at = NULL, updated_at = now()
            WHERE id = $1
            RETURNING *`,
    values: [id],
  });
  return rows[0]!;
}
