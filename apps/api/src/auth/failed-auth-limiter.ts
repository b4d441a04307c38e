import { Inject, Injectable } from '@nestjs/common';
import { Counter, type Registry } from 'prom-client';
import { DomainError } from '@chronicle/domain';
import { CONFIG, METRICS_REGISTRY, type Config } from '@chronicle/platform';

export const FAILED_AUTH_WINDOW_MS = 60_000;
/** Addresses remembered at once; past that the oldest windows are forgotten (they mostly ended). */
const ADDRESSES = 10_000;

export type AuthFailure = 'missing' | 'unknown';

/**
 * Guessing tokens costs: per client address, AUTH_FAILURES_PER_MINUTE failed authentications a minute,
 * then 429 with Retry-After until the minute is over, without looking the token up. Per API process
 * (a client spread over N replicas gets N times the limit, still far too few to guess a token).
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
      help: 'Requests refused 429 because their address failed to authenticate too often',
      registers: [registry],
    });
  }

  /** Refuses the address while it is over the limit: 429 rate-limited, with when to try again. */
  refuseIfLimited(address: string): void {
    const window = this.current(address);
    if (window === undefined || window.failures < this.limit) return;
    this.limited.inc();
    const retryAfterSeconds = Math.max(1, Math.ceil((window.startedAt + FAILED_AUTH_WINDOW_MS - this.now()) / 1000));
    throw new DomainError(
      'rate-limited',
      `too many failed authentications from this address; retry in ${retryAfterSeconds} s`,
      {
        retryAfterSeconds,
      },
    );
  }

  recordFailure(address: string, reason: AuthFailure): void {
    this.failures.inc({ reason });
    const window = this.current(address);
    if (window !== undefined) {
      window.failures++;
      return;
    }
    if (this.windows.size >= ADDRESSES) this.windows.delete(this.windows.keys().next().value!);
    this.windows.set(address, { startedAt: this.now(), failures: 1 });
  }

  private current(address: string): { startedAt: number; failures: number } | undefined {
    const window = this.windows.get(address);
    if (window === undefined || this.now() - window.startedAt < FAILED_AUTH_WINDOW_MS) return window;
    this.windows.delete(address);
    return undefined;
  }
}
