import type { Queryable } from '@chronicle/platform';
import type { PresentRun } from '@chronicle/domain';
import { RUN_COLUMNS, runFromRow, type RunRow } from '@chronicle/projections';

export interface DlqCursor {
  readonly deadAt: string;
  readonly runId: string;
}

/** A page of one team's dead runs not discarded ($1 job or null, $2 and $3 the cursor, $4 the limit). */
function deadRunsOf(team: string): string {
  return `SELECT ${RUN_COLUMNS}, r.dead_at AS list_dead_at, r.run_id AS list_run_id FROM runs r
           WHERE r.team = ${team} AND r.ended = 'dead' AND NOT r.discarded
             AND ($1::text IS NULL OR r.job = $1)
             AND ($2::timestamptz IS NULL OR (r.dead_at, r.run_id) < ($2::timestamptz, $3::text))
           ORDER BY r.dead_at DESC, r.run_id DESC
           LIMIT $4`;
}

const TEAM_PAGE = deadRunsOf('$5');
/**
 * The admin's: a page of each team's ($5, every team's id: the teams are in the control database, the
 * runs may be on a server of their own), merged (teams are few).
 */
const EVERY_TEAM_PAGE = `SELECT p.* FROM unnest($5::text[]) AS t(id) CROSS JOIN LATERAL (${deadRunsOf('t.id')}) p
  ORDER BY p.list_dead_at DESC, p.list_run_id DESC
  LIMIT $4`;

/**
 * A page of the dead runs of a team (the ids of every team: the admin's), newest first. Keyset
 * pagination on (dead_at, run_id): runs that die while a client pages only appear before its cursor, so
 * pages never repeat or skip. Plan: Index Scan using runs_dlq_idx (team, dead_at DESC, run_id DESC),
 * partial on dead, kept runs (one per team for the admin's).
 */
export async function listDeadRuns(
  db: Queryable,
  teams: string | readonly string[],
  job: string | undefined,
  after: DlqCursor | undefined,
  limit: number,
): Promise<PresentRun[]> {
  const values: unknown[] = [job ?? null, after?.deadAt ?? null, after?.runId ?? null, limit, teams];
  const { rows } = await db.query<RunRow>(
    typeof teams === 'string'
      ? { name: 'dlq_list', text: TEAM_PAGE, values }
      : { name: 'dlq_list_every_team', text: EVERY_TEAM_PAGE, values },
  );
  return rows.map(runFromRow);
}
