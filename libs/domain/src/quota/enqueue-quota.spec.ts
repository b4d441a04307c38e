import {
  decideEnqueue,
  effectiveBurst,
  PENDING_RETRY_AFTER_SECONDS,
  refillBucket,
  type TeamQuotas,
} from './enqueue-quota';

const T0 = new Date('2026-03-15T02:00:00.000Z');
const at = (seconds: number): Date => new Date(T0.getTime() + seconds * 1000);
const quotas = (q: Partial<TeamQuotas>): TeamQuotas => ({
  enqueueRatePerSecond: null,
  enqueueBurst: null,
  maxPendingRuns: null,
  ...q,
});

describe('enqueue quotas', () => {
  it('defaults the burst to max(1, ceil(rate)), and has none without a rate', () => {
    expect(effectiveBurst(quotas({ enqueueRatePerSecond: 0.001 }))).toBe(1);
    expect(effectiveBurst(quotas({ enqueueRatePerSecond: 2.5 }))).toBe(3);
    expect(effectiveBurst(quotas({ enqueueRatePerSecond: 0.5, enqueueBurst: 20 }))).toBe(20);
    expect(effectiveBurst(quotas({ enqueueBurst: 20 }))).toBeNull();
  });

  it('refills at the rate up to the burst, and earns nothing when the clock goes back', () => {
    expect(refillBucket({ tokens: 0, refilledAt: T0 }, 2, 10, at(1.5))).toEqual({ tokens: 3, refilledAt: at(1.5) });
    expect(refillBucket({ tokens: 4, refilledAt: T0 }, 2, 10, at(60))).toEqual({ tokens: 10, refilledAt: at(60) });
    expect(refillBucket({ tokens: 4, refilledAt: T0 }, 2, 10, at(-5))).toEqual({ tokens: 4, refilledAt: T0 });
  });

  it('admits everything without quotas', () => {
    expect(decideEnqueue({ quotas: quotas({}), bucket: null, pendingRuns: 1_000_000, cost: 1000, now: T0 })).toEqual({
      admitted: true,
      bucket: null,
    });
  });

  it('starts a new bucket full and takes one token per run', () => {
    const decision = decideEnqueue({
      quotas: quotas({ enqueueRatePerSecond: 1, enqueueBurst: 20 }),
      bucket: null,
      pendingRuns: 0,
      cost: 5,
      now: T0,
    });
    expect(decision).toEqual({ admitted: true, bucket: { tokens: 15, refilledAt: T0 } });
  });

  it('admits exactly the burst at a tiny rate, then refuses until a token is earned', () => {
    const q = quotas({ enqueueRatePerSecond: 0.001, enqueueBurst: 20 });
    let bucket = { tokens: 20, refilledAt: T0 };
    let admitted = 0;
    for (let n = 0; n < 25; n++) {
      const decision = decideEnqueue({ quotas: q, bucket, pendingRuns: 0, cost: 1, now: at(n * 0.01) });
      if (!decision.admitted) {
        expect(decision).toMatchObject({ quota: 'enqueueRatePerSecond' });
        expect(decision.retryAfterSeconds).toBeGreaterThanOrEqual(999);
        expect(decision.retryAfterSeconds).toBeLessThanOrEqual(1000);
        continue;
      }
      admitted++;
      bucket = decision.bucket!;
    }
    expect(admitted).toBe(20);
  });

  it('asks a batch to wait until the bucket holds all its tokens, never less than a second', () => {
    const q = quotas({ enqueueRatePerSecond: 2, enqueueBurst: 10 });
    expect(
      decideEnqueue({ quotas: q, bucket: { tokens: 1, refilledAt: T0 }, pendingRuns: 0, cost: 8, now: T0 }),
    ).toMatchObject({ admitted: false, retryAfterSeconds: 4 });
    expect(
      decideEnqueue({ quotas: q, bucket: { tokens: 0.9, refilledAt: T0 }, pendingRuns: 0, cost: 1, now: T0 }),
    ).toMatchObject({ admitted: false, retryAfterSeconds: 1 });
    // 0.1 + 3 s × 0.3/s is one token (0.9999999999999999 in floating point): admitted.
    expect(
      decideEnqueue({
        quotas: quotas({ enqueueRatePerSecond: 0.3, enqueueBurst: 10 }),
        bucket: { tokens: 0.1, refilledAt: T0 },
        pendingRuns: 0,
        cost: 1,
        now: at(3),
      }),
    ).toMatchObject({ admitted: true });
  });

  it('refuses a batch larger than the burst, saying it never fits', () => {
    const decision = decideEnqueue({
      quotas: quotas({ enqueueRatePerSecond: 1, enqueueBurst: 10 }),
      bucket: { tokens: 10, refilledAt: T0 },
      pendingRuns: 0,
      cost: 11,
      now: T0,
    });
    expect(decision).toMatchObject({ admitted: false, quota: 'enqueueRatePerSecond', retryAfterSeconds: 1 });
    expect(decision.admitted === false && decision.detail).toMatch(/more than the team's enqueueBurst of 10/);
  });

  it('refuses runs that would take the pending count over the limit, and takes no tokens', () => {
    const q = quotas({ maxPendingRuns: 10, enqueueRatePerSecond: 1, enqueueBurst: 100 });
    expect(
      decideEnqueue({ quotas: q, bucket: { tokens: 100, refilledAt: T0 }, pendingRuns: 7, cost: 3, now: T0 }),
    ).toMatchObject({ admitted: true, bucket: { tokens: 97 } });
    expect(
      decideEnqueue({ quotas: q, bucket: { tokens: 100, refilledAt: T0 }, pendingRuns: 7, cost: 4, now: T0 }),
    ).toMatchObject({
      admitted: false,
      quota: 'maxPendingRuns',
      retryAfterSeconds: PENDING_RETRY_AFTER_SECONDS,
    });
  });

  it('names the quota with the longer wait when both refuse', () => {
    const both = { pendingRuns: 10, cost: 1, now: T0, bucket: { tokens: 0, refilledAt: T0 } };
    expect(
      decideEnqueue({ ...both, quotas: quotas({ maxPendingRuns: 10, enqueueRatePerSecond: 0.01, enqueueBurst: 1 }) }),
    ).toMatchObject({ quota: 'enqueueRatePerSecond', retryAfterSeconds: 100 });
    expect(
      decideEnqueue({ ...both, quotas: quotas({ maxPendingRuns: 10, enqueueRatePerSecond: 1, enqueueBurst: 1 }) }),
    ).toMatchObject({ quota: 'maxPendingRuns' });
  });
});
