import type { RetryPolicy } from './run-events';

/**
 * Full-jitter backoff: before retry n (1-based), rand(0, min(max, base * 2^(n-1)))
 * seconds. The random draw in [0, 1) is an
 * argument, so the same inputs give the same delay.
 */
export function backoffSeconds(retry: number, policy: RetryPolicy, draw: number): number {
  if (!(draw >= 0 && draw < 1)) throw new RangeError(`random draw must be in [0, 1), got ${draw}`);
  const ceiling = Math.min(policy.maxSeconds, policy.baseSeconds * 2 ** Math.max(0, retry - 1));
  return draw * ceiling;
}
