import type { Queryable } from '@chronicle/platform';
import type { PresentRun } from '@chronicle/domain';
import { RUN_COLUMNS, runFromRow, type RunRow } from '@chronicle/projections';

export interface DlqCursor {
  readonly deadAt: string;
  readonly runId: string;
}

/**
 * A page of the team's dead runs, newest first. Keyset pagination on
 * (dead_at, run_id): runs that die while a client pages only appear before
 * its cursor, so pages never repeat or skip. Plan: Index Scan using
 * runs_dlq_idx (team, dead_at DESC, run_id DESC), partial on dead, kept runs.
 */
export async function listDeadRuns(
  db: Queryable,
  team: string,
  job: string | undefined,
  after: DlqCursor | undefined,
  limit: number,
): Promise<PresentRun[]> {
  const { rows } = await db.query<RunRow>({
    name: 'dlq_list',
    text: `SELECT ${RUN_COLUMNS} FROM runs r
            WHERE r.team = $1 AND r.state = 'dead' AND NOT r.discarded
              AND ($2::text IS NULL OR r.job = $2)
              AND ($3::timestamptz IS NULL OR (r.dead_at, r.run_id) < ($3::timestamptz, $4::text))
            ORDER BY r.dead_at DESC, r.run_id DESC
            LIMIT $5`,
    values: [team, job ?? null, after?.deadAt ?? null, after?.runId ?? null, limit],
  });
  return rows.map(runFromRow);
}
