import { perGroupLimit, PRIORITIES, type Priority } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { CANDIDATES_CTES, CAPPED_SQL, type ClaimScope, servedCte } from './claim-ready-runs.sql';

/** A queue shared with a team, and the team's weight in it (queue_grants). */
export interface QueueGrantRow {
  readonly queue: string;
  readonly team: string;
  readonly weight: number;
}

/** A ready run the dispatch policy may choose, as CANDIDATES_CTES computes it on one server. */
export interface ClaimCandidateRow {
  readonly run_id: string;
  readonly job: string;
  readonly team: string;
  readonly queue: string;
  readonly priority: Priority;
  readonly available_at: Date;
  /** Its team's weight in its queue. */
  readonly weight: number;
}

/**
 * Step 1 of a claim over several servers (LeaseRunsHandler): one server's candidates as CLAIM_SQL
 * computes them, locking nothing. $1-$4 and $6-$8 as CLAIM_SQL's; $5 the queues' grants (jsonb rows
 * of queue, team, weight) as the control database has them, read there once for every server: a
 * server runs are kept on has no queue_grants of its own. The priorities' weights, CLAIM_SQL's $5, are
 * the merge's (chooseRuns). Always one row at least, for `capped`.
 */
const CLAIM_CANDIDATES_SQL = `WITH ${servedCte('jsonb_to_recordset($5::jsonb) AS g(queue text, team text, weight integer)')}, ${CANDIDATES_CTES}
  SELECT c.run_id, c.job, c.team, c.queue, c.priority, c.available_at, c.weight, x.capped
    FROM (SELECT ${CAPPED_SQL} AS capped) x
    LEFT JOIN candidates c ON true`;

export async function findClaimCandidates(
  db: Queryable,
  scope: ClaimScope,
  options: {
    /** The queues' grants (findQueueSettings); none for a team's worker, which serves its team alone. */
    readonly grants: readonly QueueGrantRow[];
    /** The batch still wanted. */
    readonly limit: number;
    /** Runs not to propose: the server's reserved ones, and those an earlier round of the call lost. */
    readonly skipped: readonly string[];
    readonly prefetchMs: number;
  },
): Promise<{ candidates: ClaimCandidateRow[]; capped: boolean }> {
  const { rows } = await db.query<(ClaimCandidateRow | { readonly run_id: null }) & { readonly capped: boolean }>({
    name: 'claim_find_candidates',
    text: CLAIM_CANDIDATES_SQL,
    values: [
      scope.queues,
      scope.team,
      options.limit,
      PRIORITIES,
      JSON.stringify(options.grants),
      perGroupLimit(options.limit, scope.teamsServed),
      options.skipped,
      options.prefetchMs,
    ],
  });
  return {
    candidates: rows.filter((r): r is ClaimCandidateRow & { readonly capped: boolean } => r.run_id !== null),
    capped: rows[0]?.capped ?? false,
  };
}

/**
 * What a claim over several servers reads of these queues in the control database, which the other servers
 * keep no copy of, in one round trip: their grants (`withGrants`: a platform worker's; a team's worker
 * serves its team alone), their caps (queue_limits, migrations/0040) and their rates (queue_rates,
 * migrations/0044), by queue; and every team's rate (team_rates, migrations/0045), by team.
 */
export async function findQueueSettings(
  control: Queryable,
  queues: readonly string[],
  withGrants: boolean,
): Promise<{
  grants: QueueGrantRow[];
  caps: Map<string, number>;
  rates: Map<string, { readonly perSecond: number; readonly burst: number }>;
  teamRates: Map<string, { readonly perSecond: number; readonly burst: number }>;
}> {
  const { rows } = await control.query<
    QueueGrantRow & { kind: 'grant' | 'cap' | 'rate' | 'team-rate'; cap: number | null; per_second: number | null }
  >({
    name: 'claim_find_queue_settings',
    text: `SELECT 'grant' AS kind, queue, team, weight, NULL::integer AS cap, NULL::float8 AS per_second
             FROM queue_grants WHERE $2 AND queue = ANY($1::text[])
           UNION ALL
           SELECT 'cap', queue, NULL, NULL, concurrency, NULL FROM queue_limits WHERE queue = ANY($1::text[])
           UNION ALL
           SELECT 'rate', queue, NULL, NULL, burst, per_second FROM queue_rates WHERE queue = ANY($1::text[])
           UNION ALL
           SELECT 'team-rate', NULL, team, NULL, burst, per_second FROM team_rates`,
    values: [queues, withGrants],
  });
  return {
    grants: rows.filter((r) => r.kind === 'grant').map(({ queue, team, weight }) => ({ queue, team, weight })),
    caps: new Map(rows.flatMap((r) => (r.kind === 'cap' ? [[r.queue, r.cap!]] : []))),
    rates: new Map(
      rows.flatMap((r) => (r.kind === 'rate' ? [[r.queue, { perSecond: r.per_second!, burst: r.cap! }]] : [])),
    ),
    teamRates: new Map(
      rows.flatMap((r) => (r.kind === 'team-rate' ? [[r.team!, { perSecond: r.per_second!, burst: r.cap! }]] : [])),
    ),
  };
}
