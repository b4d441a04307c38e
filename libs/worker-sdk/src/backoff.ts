export interface BackoffPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
}

/** For the lease loop and completion retries: fast first retry, never more than 5 s apart. */
export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 100, maxMs: 5_000 };

/**
 * Capped exponential delay after the `failures`-th failure in a row, with
 * "equal jitter" (between half and all of it): workers that lost the server
 * together do not come back in lockstep, and the delay still grows.
 */
export function backoffDelayMs(
  failures: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, failures - 1));
  return exponential / 2 + (random() * exponential) / 2;
}

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
