import type { Queryable } from '@chronicle/platform';
import { START, type LogPosition } from '@chronicle/event-store';

export interface StoredCheckpoint {
  readonly version: number;
  readonly position: LogPosition;
}

export async function loadCheckpoint(db: Queryable, projection: string): Promise<StoredCheckpoint | undefined> {
  const { rows } = await db.query<{ version: number; commit_position: string; prepare_position: string }>(
    'SELECT version, commit_position, prepare_position FROM projection_checkpoints WHERE projection = $1',
    [projection],
  );
  const row = rows[0];
  return row === undefined
    ? undefined
    : {
        version: row.version,
        position: { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) },
      };
}

/** Start (or restart, for a new version) a projection from the beginning of the log. */
export async function resetCheckpoint(db: Queryable, projection: string, version: number): Promise<void> {
  await db.query(
    `INSERT INTO projection_checkpoints (projection, version, commit_position, prepare_position)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (projection) DO UPDATE
        SET version = EXCLUDED.version, commit_position = EXCLUDED.commit_position,
            prepare_position = EXCLUDED.prepare_position, updated_at = now()`,
    [projection, version, START.commit.toString(), START.prepare.toString()],
  );
}

/**
 * Move the checkpoint from `from` to `to`, in the batch's transaction. The
 * compare-and-set is the fence: if another runner moved it meanwhile, nothing
 * is updated and the caller rolls the batch back.
 */
export async function advanceCheckpoint(
  db: Queryable,
  projection: string,
  from: LogPosition,
  to: LogPosition,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE projection_checkpoints
        SET commit_position = $4, prepare_position = $5, updated_at = now()
      WHERE projection = $1 AND commit_position = $2 AND prepare_position = $3`,
    [projection, from.commit.toString(), from.prepare.toString(), to.commit.toString(), to.prepare.toString()],
  );
  return rowCount === 1;
}
