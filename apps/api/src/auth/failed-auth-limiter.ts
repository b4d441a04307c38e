import { Inject, Injectable } from '@nestjs/common';
import { Counter, type Registry } from 'prom-client';
import { DomainError } from '@chronicle/domain';
import { CONFIG, METRICS_REGISTRY, type Config } from '@chronicle/platform';

export const FAILED_AUTH_WINDOW_MS = 60_000;
/** Addresses and tokens remembered at once; past that the oldest windows are forgotten (they mostly ended). */
const KEYS = 20_000;

export type AuthFailure = 'missing' | 'unknown';

/**
 * Failed authentications cost, counted in windows of a minute per key: a client address, and a
 * presented token (by a prefix of its hash: no token is kept). Past AUTH_FAILURES_PER_MINUTE failures a
 * key is refused 429 with Retry-After until its minute is over. A token that keeps failing (a revoked
 * worker's, retrying) is refused without being looked up; an address that failed too often still has
 * the tokens it presents looked up, and a valid one passes: one worker left with a revoked token must
 * not stop the others behind the same address (a NAT, a host). Per API process (a client spread over N
 * replicas gets N times the limit).
 */
@Injectable()
export class FailedAuthLimiter {
  private readonly windows = new Map<string, { startedAt: number; failures: number }>();
  private readonly failures: Counter<'reason'>;
  private readonly limited: Counter;

  private readonly now: () => number = Date.now;

  /** One per API process: REST's guards and GraphQL's context share it (AuthModule). */
  private readonly limit: number;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry, @Inject(CONFIG) config: Config) {
    this.limit = config.authFailuresPerMinute;
    this.failures = new Counter({
      name: 'chronicle_auth_failures_total',
      help: 'Requests refused 401: no bearer token, or one this API does not know (unknown, revoked, expired)',
      labelNames: ['reason'],
      registers: [registry],
    });
    this.limited = new Counter({
      name: 'chronicle_auth_rate_limited_total',
      help: 'Requests refused 429 because their address, or the token they presented, failed to authenticate too often',
      registers: [registry],
    });
  }

  /** Whether `key` (addressKey, tokenKey) failed too often this minute. */
  isLimited(key: string): boolean {
    const window = this.current(key);
    return window !== undefined && window.failures >= this.limit;
  }

  /** Refuses `key` while it is over the limit: 429 rate-limited, with when to try again. */
  refuseIfLimited(key: string): void {
    if (!this.isLimited(key)) return;
    this.limited.inc();
    const retryAfterSeconds = Math.max(
      1,
      Math.ceil((this.current(key)!.startedAt + FAILED_AUTH_WINDOW_MS - this.now()) / 1000),
    );
    const what = key.startsWith(TOKEN_KEY) ? 'this token' : 'this address';
    throw new DomainError(
      'rate-limited',
      `too many failed authentications with ${what}; retry in ${retryAfterSeconds} s`,
      {
        retryAfterSeconds,
      },
    );
  }

  /** A request refused 401: counted, and in each key's window. */
  recordFailure(keys: readonly string[], reason: AuthFailure): void {
    this.failures.inc({ reason });
    this.countFailure(keys);
  }

  /** A failure in the windows of `keys`, not counted as a 401 (it is answered 429). */
  countFailure(keys: readonly string[]): void {
    for (const key of keys) {
      const window = this.current(key);
      if (window !== undefined) {
        window.failures++;
        continue;
      }
      if (this.windows.size >= KEYS) this.windows.delete(this.windows.keys().next().value!);
      this.windows.set(key, { startedAt: this.now(), failures: 1 });
    }
  }

  private current(key: string): { startedAt: number; failures: number } | undefined {
    const window = this.windows.get(key);
    if (window === undefined || this.now() - window.startedAt < FAILED_AUTH_WINDOW_MS) return window;
    this.windows.delete(key);
    return undefined;
  }
}

const ADDRESS_KEY = 'address:';
const TOKEN_KEY = 'token:';

/** The limiter's key of a client address. */
export function addressKey(address: string): string {
  return ADDRESS_KEY + address;
}

/** The limiter's key of a presented token, from its hash (hex): the first 16 digits tell tokens apart. */
export function tokenKey(tokenHash: string): string {
  return TOKEN_KEY + tokenHash.slice(0, 16);
}
