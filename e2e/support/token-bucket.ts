/**
 * How far a run of lease times goes past what a token bucket allows: leases i to j (sorted times, in
 * milliseconds) within t_j - t_i may number at most burst + perSecond x (t_j - t_i) / 1000. The largest
 * excess over every stretch; 0 or less: the bucket was never beaten.
 */
export function mostOverBucket(times: readonly number[], perSecond: number, burst: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = -Infinity;
  for (let i = 0; i < sorted.length; i++)
    for (let j = i; j < sorted.length; j++)
      most = Math.max(most, j - i + 1 - (burst + (perSecond * (sorted[j]! - sorted[i]!)) / 1000));
  return most;
}
