import type { Priority, PriorityWeights } from '@chronicle/domain';
import type { ClaimCandidateRow } from './claim-candidates.sql';

/**
 * CLAIM_SQL's dispatch policy (claim-ready-runs.sql.ts: team_phases, priority_phases, within_priority
 * and chosen, and the doc comment of lockReadyRuns) over the candidates of several servers at once, so
 * that its shares hold over the fleet and not per server: the first `max` candidates in its order.
 *  - teams within a priority: the k-th oldest run of a team, over every server its runs are on, has the
 *    key (k - u_team) / weight_team;
 *  - priorities: the k-th run of a priority in that order has the key (k - u_priority) / weight_priority.
 * `random` draws the phases u in [0, 1), one per (priority, team) and one per priority, as CLAIM_SQL's
 * random() does per claim.
 *
 * Within a team's runs of a priority, oldest first, where `turn` (0 for none) makes a run TURN_MS
 * younger per step: the lease call ranks the servers in a rotating order, so that a batch takes a
 * team's runs from one server where it has enough of about the same age (one claim there, not one per
 * server), and the next call from the next; a run older by more than that still goes first. The
 * shares of priorities and teams, which are over all of a team's runs, are the same either way.
 */
/** How much younger a run counts per step of its server's turn (chooseRuns). */
export const TURN_MS = 250;

export function chooseRuns<C extends ClaimCandidateRow>(
  candidates: readonly C[],
  weights: PriorityWeights,
  max: number,
  random: () => number,
  turn: (run: C) => number = () => 0,
): C[] {
  const teams = new Map<string, C[]>();
  for (const run of candidates) listOf(teams, `${run.priority}\u0000${run.team}`).push(run);
  const byPriority = new Map<Priority, Array<{ run: C; key: number }>>();
  for (const runs of teams.values()) {
    const u = random();
    runs.sort((a, b) => (turn(a) - turn(b)) * TURN_MS + oldestFirst(a, b));
    runs.forEach((run, i) => listOf(byPriority, run.priority).push({ run, key: (i + 1 - u) / run.weight }));
  }
  const keyed: Array<{ run: C; key: number }> = [];
  for (const [priority, runs] of byPriority) {
    const u = random();
    runs.sort((a, b) => a.key - b.key || oldestFirst(a.run, b.run));
    runs.forEach(({ run }, i) => keyed.push({ run, key: (i + 1 - u) / weights[priority] }));
  }
  return keyed
    .sort((a, b) => a.key - b.key)
    .slice(0, max)
    .map(({ run }) => run);
}

function oldestFirst(a: ClaimCandidateRow, b: ClaimCandidateRow): number {
  return a.available_at.getTime() - b.available_at.getTime();
}

function listOf<K, V>(map: Map<K, V[]>, key: K): V[] {
  let list = map.get(key);
  if (list === undefined) map.set(key, (list = []));
  return list;
}
