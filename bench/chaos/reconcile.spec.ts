import { reconcile, violations, type ChaosInput, type LoggedEvent } from './reconcile';

const END = new Date('2026-12-03T12:05:00Z');
const FROM = new Date('2026-12-03T12:03:00Z');

const scheduled = (runId: string, dueAt: string, extra: Record<string, unknown> = {}): LoggedEvent => ({
  streamId: `run-${runId}`,
  type: 'RunScheduled',
  data: { runId, job: 'chaos.task', dueAt, source: 'api', ...extra },
});
const event = (runId: string, type: string, data: Record<string, unknown> = {}): LoggedEvent => ({
  streamId: `run-${runId}`,
  type,
  data,
});
const cronFire = (job: string, at: string, runId = `${job}@${at}`): LoggedEvent =>
  scheduled(runId, at, { job, source: 'schedule' });
/** A cron job's two fires in the window, each run to success. */
const cronRuns = (job: string): LoggedEvent[] =>
  ['2026-12-03T12:03:00.000Z', '2026-12-03T12:04:00.000Z'].flatMap((at) => [
    cronFire(job, at),
    event(`${job}@${at}`, 'RunLeased', { fencingToken: 1 }),
    event(`${job}@${at}`, 'RunSucceeded', { fencingToken: 1 }),
  ]);

/** A healthy run: a one-off that expired once (both executions recorded), then succeeded. */
function healthy(): ChaosInput {
  return {
    events: [
      scheduled('a', '2026-12-03T12:01:00Z'),
      event('a', 'RunLeased', { fencingToken: 1 }),
      event('a', 'LeaseExpired', { fencingToken: 1 }),
      event('a', 'RunLeased', { fencingToken: 2 }),
      event('a', 'RunSucceeded', { fencingToken: 2 }),
      scheduled('b', '2026-12-03T12:02:00Z'),
      event('b', 'RunLeased', { fencingToken: 1 }),
      event('b', 'RunFailed', { fencingToken: 1 }),
      event('b', 'RunLeased', { fencingToken: 2 }),
      event('b', 'RunSucceeded', { fencingToken: 2 }),
      // Due after the end: may still wait.
      scheduled('later', '2026-12-03T12:06:00Z'),
      ...cronRuns('chaos.cron-0'),
    ],
    end: END,
    cron: { jobs: ['chaos.cron-0'], from: FROM },
    executions: [
      { runId: 'a', fencingToken: 1 },
      { runId: 'a', fencingToken: 2 },
      { runId: 'b', fencingToken: 1 },
      { runId: 'b', fencingToken: 2 },
    ],
    enqueues: [
      { idempotencyKey: 'k-a', runIds: ['a', 'a'] },
      { idempotencyKey: 'k-b', runIds: ['b'] },
    ],
    takeovers: [
      { fault: 'killed', ms: 2_000 },
      { fault: 'killed', ms: 3_000 },
      { fault: 'killed', ms: 2_500 },
      { fault: 'stopped', ms: 10_400 },
    ],
    takeoversMissing: 0,
    rebuildDifferences: [],
    postgresRestart: { done: true },
    faults: { kills: 3, stops: 1 },
  };
}

const figure = (input: ChaosInput, name: string): string =>
  reconcile(input).find((c) => c.name.startsWith(name))!.value;
const violated = (input: ChaosInput): string[] => violations(reconcile(input)).map((c) => c.name);

describe('the chaos run’s reconciliation', () => {
  it('passes a log where every run ended, counting the execution after an expiry as a duplicate', () => {
    const input = healthy();
    expect(violated(input)).toEqual([]);
    expect(figure(input, 'runs due before the end')).toBe('4 of 4');
    expect(figure(input, 'executions / duplicates')).toBe('4 / 1');
    expect(figure(input, 'cron fires')).toBe('2 of 2');
    expect(figure(input, 'shard takeovers, owner killed')).toBe('3, 2.5 s, 3.0 s');
    expect(figure(input, 'shard takeovers, owner stopped')).toBe('1, 10.4 s, 10.4 s');
  });

  it('finds a run due before the end that is still waiting', () => {
    const input = healthy();
    const events = [
      ...input.events,
      scheduled('c', '2026-12-03T12:04:30Z'),
      event('c', 'RunLeased', { fencingToken: 1 }),
    ];
    expect(violated({ ...input, events })).toEqual(['runs due before the end, all terminal']);
  });

  it('finds a fencing token granted twice, and a second lease while the first held', () => {
    const input = healthy();
    const events = [
      ...input.events,
      scheduled('d', '2026-12-03T12:01:00Z'),
      event('d', 'RunLeased', { fencingToken: 1 }),
      event('d', 'RunLeased', { fencingToken: 1 }),
      event('d', 'RunSucceeded', { fencingToken: 1 }),
    ];
    expect(violated({ ...input, events })).toEqual([
      'leases granted, no fencing token twice for a run',
      'leases of a run one after another',
    ]);
  });

  it('finds a cron fire missing and one materialised twice', () => {
    const input = healthy();
    const missing = input.events.filter((e) => !e.streamId.includes('12:04'));
    expect(violated({ ...input, events: missing })).toEqual(['cron fires in the window, each materialised once']);
    const doubled = [...input.events, cronFire('chaos.cron-0', '2026-12-03T12:03:00.000Z', 'other-id')];
    const checks = reconcile({ ...input, events: doubled });
    expect(violations(checks).map((c) => c.name)).toContain('cron fires in the window, each materialised once');
    expect(checks.find((c) => c.name.startsWith('cron'))!.examples).toEqual([
      'chaos.cron-0 @ 2026-12-03T12:03:00.000Z: materialised 2 times',
    ]);
  });

  it('finds a doubled fire outside the window too', () => {
    const input = healthy();
    const events = [
      ...input.events,
      cronFire('chaos.cron-0', '2026-12-03T12:10:00.000Z', 'x1'),
      cronFire('chaos.cron-0', '2026-12-03T12:10:00.000Z', 'x2'),
    ];
    expect(violated({ ...input, events })).toEqual(['cron fires in the window, each materialised once']);
  });

  it('finds an execution under a lease the log never granted, and a lease executed twice', () => {
    const input = healthy();
    expect(violated({ ...input, executions: [...input.executions, { runId: 'a', fencingToken: 7 }] })).toEqual([
      'executions / duplicates, each after a LeaseExpired',
    ]);
    expect(violated({ ...input, executions: [...input.executions, { runId: 'b', fencingToken: 2 }] })).toEqual([
      'executions / duplicates, each after a LeaseExpired',
    ]);
  });

  it('finds an acknowledged enqueue missing from the log, and one key answered with two runs', () => {
    const input = healthy();
    expect(violated({ ...input, enqueues: [...input.enqueues, { idempotencyKey: 'k-z', runIds: ['z'] }] })).toEqual([
      'enqueues acknowledged, each one run in the log',
    ]);
    expect(violated({ ...input, enqueues: [{ idempotencyKey: 'k-a', runIds: ['a', 'b'] }] })).toEqual([
      'enqueues acknowledged, each one run in the log',
    ]);
    // Never answered: not a violation, counted.
    expect(figure({ ...input, enqueues: [...input.enqueues, { idempotencyKey: 'k-n', runIds: [] }] }, 'enqueues')).toBe(
      '2 of 3 sent',
    );
  });

  it('finds shards never taken over, rows that differ from a rebuild, and a run without faults', () => {
    const input = healthy();
    expect(violated({ ...input, takeoversMissing: 2 })).toEqual([
      'shards of a killed or stopped owner not served again',
    ]);
    expect(violated({ ...input, rebuildDifferences: ['runs: a'] })).toEqual([
      'read models equal a rebuild from the log',
    ]);
    expect(violated({ ...input, faults: { kills: 0, stops: 0 } })).toEqual([
      'faults: processes killed / stopped past the lease',
    ]);
  });
});
