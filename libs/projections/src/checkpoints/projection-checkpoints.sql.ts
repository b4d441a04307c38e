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
export function resetCheckpoint(db: Queryable, projection: string, version: number): Promise<void> {
  return setCheckpoint(db, projection, version, START);
}

/** A projection's checkpoint set to a position, whatever it was: a rebuilt projection's, as it is swapped in. */
export async function setCheckpoint(
  db: Queryable,
  projection: string,
  version: number,
  position: LogPosition,
): Promise<void> {
  await db.query(
    `INSERT INTO projection_checkpoints (projection, version, commit_position, prepare_position)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (projection) DO UPDATE
        SET version = EXCLUDED.version, commit_position = EXCLUDED.commit_position,
            prepare_position = EXCLUDED.prepare_position, updated_at = now()`,
    [projection, version, position.commit.toString(), position.prepare.toString()],
  );
}

/** One projection's checkpoint move, from where it is to the end of a batch. */
export interface CheckpointMove {
  readonly projection: string;
  readonly from: LogPosition;
  readonly to: LogPosition;
}

/**
 * Move each projection's checkpoint from `from` to `to`, in the batch's
 * transaction, in one statement. The compare-and-set is the fence: if
 * another runner moved any of them meanwhile, that one is not updated, the
 * answer is false, and the caller rolls the batch back.
 */
export async function advanceCheckpoints(db: Queryable, moves: readonly CheckpointMove[]): Promise<boolean> {
  if (moves.length === 0) return true;
  const { rowCount } = await db.query({
    name: 'projection_checkpoints_advance',
    text: `UPDATE projection_checkpoints c
              SET commit_position = m.to_commit, prepare_position = m.to_prepare, updated_at = now()
             FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[])
                  AS m(projection, from_commit, from_prepare, to_commit, to_prepare)
            WHERE c.projection = m.projection AND c.commit_position = m.from_commit AND c.prepare_position = m.from_prepare`,
    values: [
      moves.map((m) => m.projection),
      moves.map((m) => m.from.commit.toString()),
      moves.map((m) => m.from.prepare.toString()),
      moves.map((m) => m.to.commit.toString()),
      moves.map((m) => m.to.prepare.toString()),
    ],
  });
  return rowCount === moves.length;
}
