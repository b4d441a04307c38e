/**
 * How far a run of lease times goes past what a token bucket allows: leases i to j (times in milliseconds)
 * may number at most burst + perSecond x (t_j - t_i + slackMs) / 1000. The largest excess over every
 * stretch; 0 or less: the bucket was never beaten. `slackMs`: a lease's recorded time (its RunLeased's
 * leasedAt) is its claim's transaction start, which comes a few milliseconds before the claim counts the
 * bucket, and over several servers on another server's clock than the bucket's.
 */
export function mostOverBucket(times: readonly number[], perSecond: number, burst: number, slackMs = 50): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = -Infinity;
  for (let i = 0; i < sorted.length; i++)
    for (let j = i; j < sorted.length; j++)
      most = Math.max(most, j - i + 1 - (burst + (perSecond * (sorted[j]! - sorted[i]! + slackMs)) / 1000));
  return most;
}
