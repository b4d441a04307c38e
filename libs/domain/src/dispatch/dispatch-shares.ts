import type { Priority } from '../run/run-events';

/** The claims' shares of the priorities that have ready runs (PRIORITY_WEIGHTS). */
export type PriorityWeights = Readonly<Record<Priority, number>>;

/** 70 / 25 / 5: bulk is slowed, never starved (docs/api.md, "Dispatch: priorities, fairness, concurrency"). */
export const DEFAULT_PRIORITY_WEIGHTS: PriorityWeights = { critical: 70, default: 25, bulk: 5 };

/**
 * Runs a claim reads per (queue, team, priority): a team's fair share of the
 * batch, doubled for the teams that have more than their share, 4 at least;
 * a batch left short by it is filled by another claim (capped). At most
 * twice the batch: the runs at the head of a queue may be another claim's
 * of the same moment (locked, stepped over), and two claims on one queue
 * should take the first and the next batch, not one batch and none.
 */
export function perGroupLimit(limit: number, teamsServed: number): number {
  return Math.min(2 * limit, Math.max(4, Math.ceil((2 * limit) / Math.max(1, teamsServed))));
}
