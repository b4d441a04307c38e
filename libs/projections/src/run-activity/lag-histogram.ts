import type { RunLeasedData } from '@chronicle/domain';

/**
 * A lease's schedule lag in ms: its time minus the run's due time, of first leases only (a retry's
 * wait is its backoff, not lag; null for those); a lease before its due time (a clock step) has none.
 * The dashboard's charts (run_activity) and GET /metrics' chronicle_schedule_lag_seconds both count it.
 */
export function scheduleLagMs(leased: RunLeasedData, dueAt: Date): number | null {
  return leased.attempt === 1 ? Math.max(Date.parse(leased.leasedAt) - dueAt.getTime(), 0) : null;
}

/**
 * Schedule lag (scheduleLagMs) as a histogram: `counts[i]` is the
 * number of leases with a lag of at most LAG_BUCKET_BOUNDS_MS[i] and more than the bound before it;
 * the last count is every lag above the last bound. Coarse at the top on purpose: what on-call
 * reads is "under a second" against "a minute late".
 */
export const LAG_BUCKET_BOUNDS_MS: readonly number[] = [
  10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000,
];
/** One count per bound, and one for everything above the last. */
export const LAG_BUCKETS = LAG_BUCKET_BOUNDS_MS.length + 1;

export function emptyLagCounts(): number[] {
  return new Array<number>(LAG_BUCKETS).fill(0);
}

/** The bucket a lag falls in; a lease before its due time (a clock step) counts as no lag. */
export function lagBucketOf(lagMs: number): number {
  const index = LAG_BUCKET_BOUNDS_MS.findIndex((bound) => Math.max(lagMs, 0) <= bound);
  return index === -1 ? LAG_BUCKETS - 1 : index;
}

/**
 * The q-quantile (0 < q < 1) in seconds, interpolated linearly inside its bucket as Prometheus's
 * histogram_quantile does; above the last bound, the last bound. Null without any lease.
 */
export function lagQuantileSeconds(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((sum, n) => sum + n, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (const [i, count] of counts.entries()) {
    if (count > 0 && below + count >= rank) {
      const upper = LAG_BUCKET_BOUNDS_MS[i];
      if (upper === undefined) return LAG_BUCKET_BOUNDS_MS[LAG_BUCKET_BOUNDS_MS.length - 1]! / 1000;
      const lower = i === 0 ? 0 : LAG_BUCKET_BOUNDS_MS[i - 1]!;
      return (lower + ((upper - lower) * (rank - below)) / count) / 1000;
    }
    below += count;
  }
  return LAG_BUCKET_BOUNDS_MS[LAG_BUCKET_BOUNDS_MS.length - 1]! / 1000;
}
