import { decideEnqueue, DomainError, type QuotaDecision, type TeamQuotas } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { findTeamQuotas, lockTeamQuotas, readQuotaState, saveTokenBucket, type TeamQuotasRow } from './team-quotas.sql';

/** What an admitted enqueue still has to write, after its append. */
export type TakeTokens = () => Promise<void>;

const NOTHING_TO_TAKE: TakeTokens = async () => undefined;

/**
 * The quota check of an enqueue of `cost` new runs, inside the enqueue's
 * transaction and before its append. A team without quotas costs one
 * primary-key read and takes no lock. A limited team's enqueues take turns
 * on the team's quota lock until they commit, so the pending count and the
 * bucket they decide from include every enqueue before them. Refused: a 429
 * and the transaction appends nothing.
 */
export async function admitEnqueue(
  tx: Queryable,
  team: string,
  cost: number,
  /** The team's pending runs kept on other servers than `tx`'s, up to a limit (runs on several servers). */
  pendingElsewhere: (limit: number) => Promise<number> = async () => 0,
): Promise<TakeTokens> {
  if (cost === 0 || (await findTeamQuotas(tx, team)) === undefined) return NOTHING_TO_TAKE;
  await lockTeamQuotas(tx, team);
  const state = await readQuotaState(tx, team);
  if (state === undefined) return NOTHING_TO_TAKE; // the quotas were removed while we waited
  const bucket =
    state.tokens === null || state.refilled_at === null
      ? null
      : { tokens: state.tokens, refilledAt: state.refilled_at };
  const decision = decideEnqueue({
    quotas: teamQuotasOf(state),
    bucket,
    pendingRuns:
      state.max_pending_runs === null
        ? state.pending_runs
        : state.pending_runs + (await pendingElsewhere(Math.max(0, state.max_pending_runs - state.pending_runs))),
    cost,
    now: state.now,
  });
  if (!decision.admitted) throw quotaExceeded(decision);
  const after = decision.bucket;
  return after === null ? NOTHING_TO_TAKE : () => saveTokenBucket(tx, team, after.tokens, after.refilledAt);
}

export function teamQuotasOf(row: TeamQuotasRow | undefined): TeamQuotas {
  return {
    enqueueRatePerSecond: row?.enqueue_rate_per_second ?? null,
    enqueueBurst: row?.enqueue_burst ?? null,
    maxPendingRuns: row?.max_pending_runs ?? null,
  };
}

/** quota-exceeded (429); the edge sends retryAfterSeconds as Retry-After. */
function quotaExceeded(refusal: Extract<QuotaDecision, { admitted: false }>): DomainError {
  return new DomainError('quota-exceeded', refusal.detail, {
    quota: refusal.quota,
    retryAfterSeconds: refusal.retryAfterSeconds,
  });
}
