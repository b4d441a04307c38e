import { DomainError } from '../domain-error';
import { backoffSeconds } from './retry-backoff';
import { decide, MAX_TOTAL_LEASE_SECONDS, type RunCommand } from './run-decider';
import type { RunEvent, RunScheduledData } from './run-events';
import { foldRun, visibleState } from './run-snapshot';

const T0 = new Date('2026-03-15T01:00:00.000Z');
const at = (seconds: number): Date => new Date(T0.getTime() + seconds * 1000);

const scheduled: RunScheduledData = {
  runId: 'r1',
  job: 'billing.export-invoices',
  team: 'billing',
  queue: 'billing',
  priority: 'critical',
  dueAt: T0.toISOString(),
  payload: { format: 'csv' },
  idempotencyKey: 'billing.export-invoices@2026-03-15T02:00:00+01:00',
  retry: { maxAttempts: 3, baseSeconds: 30, maxSeconds: 1800 },
  timeoutSeconds: 900,
  source: 'api',
  jobVersion: 1,
};

/** given events, when command: the events it decides. */
function given(...history: RunEvent[]): { when(command: RunCommand): RunEvent[] } {
  return { when: (command) => decide(command, foldRun(history)) };
}
function run(...commands: RunCommand[]): RunEvent[] {
  const history: RunEvent[] = [];
  for (const command of commands) history.push(...decide(command, foldRun(history)));
  return history;
}
const schedule: RunCommand = { type: 'ScheduleRun', run: scheduled };
const lease = (seconds: number, leaseSeconds = 30): RunCommand => ({
  type: 'LeaseRun',
  workerId: 'w1',
  leaseSeconds,
  now: at(seconds),
});
const fail = (seconds: number, fencingToken: number, retryable = true, draw = 0.5): RunCommand => ({
  type: 'CompleteRun',
  fencingToken,
  outcome: 'failure',
  error: 'boom',
  retryable,
  now: at(seconds),
  draw,
});

describe('run decider', () => {
  it('schedules a run once; a second schedule is an invalid transition', () => {
    expect(given().when(schedule)).toEqual([{ type: 'RunScheduled', data: scheduled }]);
    expect(() => given({ type: 'RunScheduled', data: scheduled }).when(schedule)).toThrow(DomainError);
  });

  it('leases a due run with the next revision as fencing token and the attempt counted', () => {
    expect(run(schedule, lease(5))[1]).toEqual({
      type: 'RunLeased',
      data: {
        attempt: 1,
        fencingToken: 1,
        workerId: 'w1',
        leasedAt: at(5).toISOString(),
        leaseExpiresAt: at(35).toISOString(),
      },
    });
  });

  it('does not lease a run before it is due', () => {
    expect(() => given({ type: 'RunScheduled', data: scheduled }).when(lease(-1))).toThrow(
      expect.objectContaining({ code: 'not-ready' }),
    );
  });

  it('leases a run due within the prefetch window ahead, to start at its due time, and none due later', () => {
    const ahead: RunCommand = { ...(lease(-1.5) as Extract<RunCommand, { type: 'LeaseRun' }>), prefetchMs: 2000 };
    expect(given({ type: 'RunScheduled', data: scheduled }).when(ahead)).toEqual([
      {
        type: 'RunLeased',
        data: {
          attempt: 1,
          fencingToken: 1,
          workerId: 'w1',
          leasedAt: at(-1.5).toISOString(),
          // The lease runs from the start, not from the lease.
          leaseExpiresAt: at(30).toISOString(),
          notBefore: T0.toISOString(),
        },
      },
    ]);
    const tooEarly: RunCommand = { ...(lease(-2.5) as Extract<RunCommand, { type: 'LeaseRun' }>), prefetchMs: 2000 };
    expect(() => given({ type: 'RunScheduled', data: scheduled }).when(tooEarly)).toThrow(
      expect.objectContaining({ code: 'not-ready' }),
    );
    // The window is at most MAX_PREFETCH_MS, whatever is asked.
    const overLong: RunCommand = { ...(lease(-2.5) as Extract<RunCommand, { type: 'LeaseRun' }>), prefetchMs: 60_000 };
    expect(() => given({ type: 'RunScheduled', data: scheduled }).when(overLong)).toThrow(
      expect.objectContaining({ code: 'not-ready' }),
    );
    // A run already due is leased as without prefetch: no notBefore.
    const due: RunCommand = { ...(lease(5) as Extract<RunCommand, { type: 'LeaseRun' }>), prefetchMs: 2000 };
    expect(given({ type: 'RunScheduled', data: scheduled }).when(due)[0]!.data).not.toHaveProperty('notBefore');
  });

  it('caps a lease by the job timeout and the 6 h total, across heartbeats', () => {
    const short = { ...scheduled, timeoutSeconds: 60 };
    const history = run({ type: 'ScheduleRun', run: short }, lease(0, 3600));
    expect((history[1]?.data as { leaseExpiresAt: string }).leaseExpiresAt).toBe(at(60).toISOString());
    const extended = given(...history).when({ type: 'ExtendLease', fencingToken: 1, leaseSeconds: 30, now: at(50) });
    expect(extended).toEqual([
      { type: 'LeaseExtended', data: { fencingToken: 1, leaseExpiresAt: at(60).toISOString() } },
    ]);
    const long = run({ type: 'ScheduleRun', run: { ...scheduled, timeoutSeconds: 86_400 } }, lease(0, 3600));
    const late = given(...long).when({
      type: 'ExtendLease',
      fencingToken: 1,
      leaseSeconds: 3600,
      now: at(MAX_TOTAL_LEASE_SECONDS - 10),
    });
    expect((late[0]?.data as { leaseExpiresAt: string }).leaseExpiresAt).toBe(
      at(MAX_TOTAL_LEASE_SECONDS).toISOString(),
    );
  });

  it('refuses heartbeats and completions with a token that is not the current lease', () => {
    const history = run(schedule, lease(0), fail(1, 1), lease(100));
    expect(() =>
      given(...history).when({ type: 'ExtendLease', fencingToken: 1, leaseSeconds: 30, now: at(101) }),
    ).toThrow(expect.objectContaining({ code: 'stale-lease' }));
    expect(() => given(...history).when(fail(101, 1))).toThrow(expect.objectContaining({ code: 'stale-lease' }));
    expect(
      given(...history).when({
        type: 'CompleteRun',
        fencingToken: 3,
        outcome: 'success',
        error: null,
        retryable: true,
        now: at(101),
        draw: 0,
      })[0]?.type,
    ).toBe('RunSucceeded');
  });

  it('fencing tokens of a run only grow', () => {
    const history = run(schedule, lease(0), fail(1, 1, true, 0), lease(2), fail(3, 3, true, 0), lease(4));
    const tokens = history
      .filter((e) => e.type === 'RunLeased')
      .map((e) => (e.data as { fencingToken: number }).fencingToken);
    expect(tokens).toEqual([1, 3, 5]);
  });

  it('retries a failure with full-jitter backoff while attempts are left, then dies', () => {
    const first = given(...run(schedule, lease(0))).when(fail(10, 1, true, 0.5));
    expect(first).toEqual([
      {
        type: 'RunFailed',
        data: {
          attempt: 1,
          fencingToken: 1,
          error: 'boom',
          retryable: true,
          failedAt: at(10).toISOString(),
          retryAt: at(10 + 15).toISOString(),
        },
      },
    ]);
    const history = run(schedule, lease(0), fail(10, 1, true, 0.5), lease(100), fail(110, 3, true, 0.5), lease(200));
    expect(history[4]?.data).toMatchObject({ retryAt: at(110 + 30).toISOString() });
    const last = given(...history).when(fail(210, 5));
    expect(last.map((e) => e.type)).toEqual(['RunFailed', 'RunDead']);
    expect(last[1]?.data).toEqual({
      attempt: 3,
      reason: 'attempts_exhausted',
      lastError: 'boom',
      deadAt: at(210).toISOString(),
    });
  });

  it("waits a failure's retryAfterSeconds instead of the backoff, at most a day, while attempts are left", () => {
    const asking = (seconds: number, command = fail(10, 1, true, 0.999)): RunCommand =>
      command.type === 'CompleteRun' ? { ...command, retryAfterSeconds: seconds } : command;
    expect(given(...run(schedule, lease(0))).when(asking(120))[0]?.data).toMatchObject({
      retryAt: at(10 + 120).toISOString(),
    });
    expect(given(...run(schedule, lease(0))).when(asking(0))[0]?.data).toMatchObject({
      retryAt: at(10).toISOString(),
    });
    expect(given(...run(schedule, lease(0))).when(asking(10 * 86_400))[0]?.data).toMatchObject({
      retryAt: at(10 + 86_400).toISOString(),
    });
    const last = run(schedule, lease(0), fail(10, 1), lease(100), fail(110, 3), lease(200));
    expect(
      given(...last)
        .when(asking(5, fail(210, 5)))
        .map((e) => e.type),
    ).toEqual(['RunFailed', 'RunDead']);
  });

  it('sends a non-retryable failure straight to the DLQ', () => {
    const events = given(...run(schedule, lease(0))).when(fail(1, 1, false));
    expect(events.map((e) => e.type)).toEqual(['RunFailed', 'RunDead']);
    expect(events[1]?.data).toMatchObject({ reason: 'not_retryable' });
  });

  it('expires a lease only after its expiry, to retry_wait or dead', () => {
    const history = run(schedule, lease(0, 30));
    expect(() => given(...history).when({ type: 'ExpireLease', now: at(29), draw: 0 })).toThrow(DomainError);
    expect(given(...history).when({ type: 'ExpireLease', now: at(31), draw: 0 })).toEqual([
      {
        type: 'LeaseExpired',
        data: { attempt: 1, fencingToken: 1, expiredAt: at(31).toISOString(), retryAt: at(31).toISOString() },
      },
    ]);
    const oneAttempt = run(
      { type: 'ScheduleRun', run: { ...scheduled, retry: { ...scheduled.retry, maxAttempts: 1 } } },
      lease(0, 30),
    );
    expect(
      given(...oneAttempt)
        .when({ type: 'ExpireLease', now: at(31), draw: 0 })
        .map((e) => e.type),
    ).toEqual(['LeaseExpired', 'RunDead']);
  });

  it('cancels only scheduled, ready or retry_wait runs', () => {
    const cancel = (s: number): RunCommand => ({ type: 'CancelRun', now: at(s) });
    expect(given(...run(schedule)).when(cancel(1))[0]?.type).toBe('RunCancelled');
    expect(given(...run(schedule, lease(0), fail(1, 1))).when(cancel(2))[0]?.type).toBe('RunCancelled');
    expect(() => given(...run(schedule, lease(0))).when(cancel(1))).toThrow(
      expect.objectContaining({ code: 'invalid-transition' }),
    );
    expect(() =>
      given(
        ...run(schedule, lease(0), {
          type: 'CompleteRun',
          fencingToken: 1,
          outcome: 'success',
          error: null,
          retryable: true,
          now: at(1),
          draw: 0,
        }),
      ).when(cancel(2)),
    ).toThrow(expect.objectContaining({ code: 'invalid-transition' }));
  });

  it('replays a dead run with a fresh attempt budget while the attempt count goes on, and discards it', () => {
    const dead = run(schedule, lease(0), fail(1, 1, false));
    const replayed = run(schedule, lease(0), fail(1, 1, false), { type: 'ReplayRun', now: at(5) }, lease(5));
    const state = foldRun(replayed);
    expect(state).toMatchObject({ status: 'leased', attempt: 2, attemptLimit: 4 });
    expect(given(...dead).when({ type: 'DiscardRun', now: at(6) })[0]?.type).toBe('RunDiscarded');
    const discarded = run(schedule, lease(0), fail(1, 1, false), { type: 'DiscardRun', now: at(6) });
    expect(() => given(...discarded).when({ type: 'ReplayRun', now: at(7) })).toThrow(DomainError);
  });

  it('derives ready from time', () => {
    const state = foldRun(run(schedule));
    if (state.status === 'absent') throw new Error('expected a run');
    expect(visibleState(state, at(-1))).toBe('scheduled');
    expect(visibleState(state, at(0))).toBe('ready');
  });
});

describe('backoff', () => {
  it('follows rand(0, min(max, base * 2^(n-1)))', () => {
    const policy = { maxAttempts: 10, baseSeconds: 30, maxSeconds: 1800 };
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffSeconds(n, policy, 0.999999))).toEqual(
      [30, 60, 120, 240, 480, 960, 1800].map((ceiling) => 0.999999 * ceiling),
    );
    expect(backoffSeconds(3, policy, 0)).toBe(0);
    expect(() => backoffSeconds(1, policy, 1)).toThrow(RangeError);
  });
});
