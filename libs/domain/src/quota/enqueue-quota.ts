/** A team's limits on enqueueing runs; null is unlimited. */
export interface TeamQuotas {
  /** Tokens added per second to the team's bucket; one token per new run. */
  readonly enqueueRatePerSecond: number | null;
  /** The bucket's size; null with a rate means max(1, ceil(rate)). */
  readonly enqueueBurst: number | null;
  /** Runs not yet in a final state (scheduled, ready, retry_wait, leased). */
  readonly maxPendingRuns: number | null;
}

export interface TokenBucket {
  readonly tokens: number;
  readonly refilledAt: Date;
}

export type QuotaName = 'enqueueRatePerSecond' | 'maxPendingRuns';

export type QuotaDecision =
  | { readonly admitted: true; readonly bucket: TokenBucket | null }
  | {
      readonly admitted: false;
      readonly quota: QuotaName;
      readonly retryAfterSeconds: number;
      readonly detail: string;
    };

/** Pending runs drain as workers finish them; nothing predicts when, so ask again soon. */
export const PENDING_RETRY_AFTER_SECONDS = 5;

/** Float sums of elapsed time times rate must not refuse a token that is, in exact arithmetic, there. */
const EPSILON = 1e-9;

export function effectiveBurst(quotas: TeamQuotas): number | null {
  if (quotas.enqueueRatePerSecond === null) return null;
  return quotas.enqueueBurst ?? Math.max(1, Math.ceil(quotas.enqueueRatePerSecond));
}

/**
 * The bucket at `now`: the tokens earned since its last refill, up to the burst. A clock that went
 * back earns nothing.
 */
export function refillBucket(bucket: TokenBucket, ratePerSecond: number, burst: number, now: Date): TokenBucket {
  const elapsedSeconds = Math.max(0, now.getTime() - bucket.refilledAt.getTime()) / 1000;
  return {
    tokens: Math.min(burst, bucket.tokens + elapsedSeconds * ratePerSecond),
    refilledAt: now > bucket.refilledAt ? now : bucket.refilledAt,
  };
}

/**
 * May the team enqueue `cost` new runs now? All or nothing: admitted with
 * the bucket after taking `cost` tokens (null without a rate), or refused by
 * the quota that asks the longer wait. A request larger than a limit can
 * never pass; it is refused with a detail that says so.
 */
export function decideEnqueue(input: {
  readonly quotas: TeamQuotas;
  readonly bucket: TokenBucket | null;
  readonly pendingRuns: number;
  readonly cost: number;
  readonly now: Date;
}): QuotaDecision {
  const { quotas, cost, now } = input;
  const refusals: Array<Extract<QuotaDecision, { admitted: false }>> = [];
  const max = quotas.maxPendingRuns;
  if (max !== null && input.pendingRuns + cost > max) {
    const detail =
      cost > max
        ? `${cost} runs are more than the team's maxPendingRuns of ${max}; send at most ${max} at a time`
        : `the team has ${input.pendingRuns} pending runs of its maxPendingRuns of ${max}; ${cost} more do not fit`;
    refusals.push({ admitted: false, quota: 'maxPendingRuns', retryAfterSeconds: PENDING_RETRY_AFTER_SECONDS, detail });
  }
  const rate = quotas.enqueueRatePerSecond;
  const burst = effectiveBurst(quotas);
  let bucket: TokenBucket | null = null;
  if (rate !== null && burst !== null) {
    const refilled = refillBucket(input.bucket ?? { tokens: burst, refilledAt: now }, rate, burst, now);
    bucket = { tokens: Math.max(0, refilled.tokens - cost), refilledAt: refilled.refilledAt };
    if (refilled.tokens + EPSILON < cost) {
      // Until the bucket holds `cost` tokens (or is full, for a request that never fits).
      const wanted = Math.min(cost, burst);
      const retryAfterSeconds = Math.max(1, Math.ceil((wanted - refilled.tokens) / rate - EPSILON));
      const detail =
        cost > burst
          ? `${cost} runs are more than the team's enqueueBurst of ${burst}; send at most ${burst} at a time`
          : `the team's enqueue rate of ${rate}/s (burst ${burst}) is used up: ${Math.floor(refilled.tokens + EPSILON)} of ${cost} runs available now`;
      refusals.push({ admitted: false, quota: 'enqueueRatePerSecond', retryAfterSeconds, detail });
    }
  }
  if (refusals.length > 0) return refusals.reduce((a, b) => (b.retryAfterSeconds > a.retryAfterSeconds ? b : a));
  return { admitted: true, bucket };
}
