import { DomainError } from '../domain-error';
import { jobDefinition } from '../job/job-defaults';
import { debouncedAt, debounceKeyKept } from './debounced-runs';
import { decide, type RunCommand } from './run-decider';
import type { RunEvent, RunScheduledData } from './run-events';
import { foldRun, type PresentRun } from './run-snapshot';

const T0 = new Date('2026-12-07T10:00:00.000Z');
const at = (seconds: number): Date => new Date(T0.getTime() + seconds * 1000);

const scheduled: RunScheduledData = {
  runId: 'r1',
  job: 'search.reindex',
  team: 'search',
  queue: 'search',
  priority: 'default',
  dueAt: at(30).toISOString(),
  payload: { doc: 1 },
  idempotencyKey: 'r1',
  retry: { maxAttempts: 3, baseSeconds: 30, maxSeconds: 1800 },
  timeoutSeconds: 900,
  source: 'api',
  jobVersion: 1,
  debounceKey: 'doc-1',
};

/** given events, when command: the events it decides. */
function given(...history: RunEvent[]): { when(command: RunCommand): RunEvent[] } {
  return { when: (command) => decide(command, foldRun(history)) };
}
const debounce = (seconds: number, payload: unknown): RunCommand => ({
  type: 'DebounceRun',
  now: at(seconds),
  availableAt: at(seconds + 30),
  payload,
});
const made: RunEvent = { type: 'RunScheduled', data: scheduled };
const leased: RunEvent = {
  type: 'RunLeased',
  data: {
    attempt: 1,
    fencingToken: 1,
    workerId: 'w1',
    leasedAt: at(31).toISOString(),
    leaseExpiresAt: at(61).toISOString(),
  },
};

describe('debounced runs', () => {
  it('moves a waiting run and records the newest payload', () => {
    expect(given(made).when(debounce(10, { doc: 2 }))).toEqual([
      {
        type: 'RunDebounced',
        data: { debouncedAt: at(10).toISOString(), availableAt: at(40).toISOString(), payload: { doc: 2 } },
      },
    ]);
  });

  it('folds each replacement: ready later, the newest payload, the due time it was made for', () => {
    const history = [made, ...given(made).when(debounce(10, { doc: 2 }))];
    history.push(...given(...history).when(debounce(20, { doc: 3 })));
    const run = foldRun(history) as PresentRun;
    expect(run).toMatchObject({ status: 'scheduled', revision: 2, availableAt: at(50).toISOString(), attempt: 0 });
    expect(run.definition).toMatchObject({ payload: { doc: 3 }, dueAt: at(30).toISOString(), debounceKey: 'doc-1' });
  });

  it('a payload by reference replaces an inline one, and an inline one a reference', () => {
    const ref = { sha256: 'ab'.repeat(32), bytes: 9000 };
    const byRef: RunEvent = {
      type: 'RunDebounced',
      data: { debouncedAt: at(1).toISOString(), availableAt: at(31).toISOString(), payload: null, payloadRef: ref },
    };
    expect((foldRun([made, byRef]) as PresentRun).definition).toMatchObject({ payload: null, payloadRef: ref });
    const inline = given(made, byRef).when(debounce(2, { doc: 4 }));
    const run = foldRun([made, byRef, ...inline]) as PresentRun;
    expect(run.definition.payload).toEqual({ doc: 4 });
    expect(run.definition).not.toHaveProperty('payloadRef');
  });

  it.each([
    ['leased', [made, leased]],
    [
      'retry_wait',
      [
        made,
        leased,
        {
          type: 'RunFailed',
          data: {
            attempt: 1,
            fencingToken: 1,
            error: 'boom',
            retryable: true,
            failedAt: at(40).toISOString(),
            retryAt: at(70).toISOString(),
          },
        },
      ],
    ],
    ['cancelled', [made, { type: 'RunCancelled', data: { cancelledAt: at(5).toISOString() } }]],
  ] as Array<[string, RunEvent[]]>)('refuses a %s run: it is no longer waiting for its first lease', (_, history) => {
    expect(() => given(...history).when(debounce(50, { doc: 9 }))).toThrow(DomainError);
  });

  it('keeps the key in the row only while the run may be debounced', () => {
    expect(debounceKeyKept(foldRun([made]) as PresentRun)).toBe('doc-1');
    expect(debounceKeyKept(foldRun([made, leased]) as PresentRun)).toBeNull();
    const { debounceKey: _, ...keyless } = scheduled;
    expect(debounceKeyKept(foldRun([{ type: 'RunScheduled', data: keyless }]) as PresentRun)).toBeNull();
  });

  it("is due the job's seconds after the enqueue", () => {
    expect(debouncedAt({ seconds: 90 }, T0)).toEqual(at(90));
  });

  it('takes a debounce of whole seconds from one to a day', () => {
    const define = (seconds: number) =>
      jobDefinition('search.reindex', 'search', { queue: 'search', debounce: { seconds } });
    expect(define(86_400).debounce).toEqual({ seconds: 86_400 });
    expect(jobDefinition('search.reindex', 'search', { queue: 'search' })).not.toHaveProperty('debounce');
    for (const bad of [0, 1.5, 86_401])
      expect(() => define(bad)).toThrow(
        expect.objectContaining({ code: 'validation-error', details: { field: 'debounce.seconds' } }),
      );
  });
});
