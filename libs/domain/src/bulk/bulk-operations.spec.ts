import { DomainError } from '../domain-error';
import type { RunScheduledData } from '../run/run-events';
import { evolve, ABSENT, type PresentRun } from '../run/run-snapshot';
import { checkBulkFilter, decideResume, decideStop, jobStillSelected, runStillSelected } from './bulk-operations';
import { BULK_STATUSES } from './bulk-vocabulary';

const scheduled: RunScheduledData = {
  runId: 'run_1',
  job: 'ops.sync',
  team: 'ops',
  queue: 'ops',
  priority: 'default',
  dueAt: '2026-03-15T02:00:00.000Z',
  payload: null,
  idempotencyKey: 'k',
  retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
  timeoutSeconds: 60,
  source: 'api',
  jobVersion: 1,
};
const waiting = evolve(ABSENT, { type: 'RunScheduled', data: scheduled }) as PresentRun;
const dead: PresentRun = {
  ...waiting,
  status: 'dead',
  lastError: 'SFTP Timeout',
  death: { attempt: 1, reason: 'attempts_exhausted', lastError: 'SFTP Timeout', deadAt: '2026-03-15T03:00:00.000Z' },
};
const snapshotAt = new Date('2026-03-15T04:00:00Z');

describe('bulk operations', () => {
  it('refuses a filter field the action does not take, naming it, and an empty time range', () => {
    const refusal = (action: Parameters<typeof checkBulkFilter>[0], filter: object): unknown => {
      try {
        checkBulkFilter(action, filter);
        return undefined;
      } catch (err) {
        return err instanceof DomainError ? [err.code, err.details.field] : err;
      }
    };
    expect(refusal('pause-jobs', { error: 'x' })).toEqual(['validation-error', 'filter.error']);
    expect(refusal('replay-dead', { state: 'ready' })).toEqual(['validation-error', 'filter.state']);
    expect(refusal('cancel-runs', { deadAfter: '2026-01-01T00:00:00Z' })).toEqual([
      'validation-error',
      'filter.deadAfter',
    ]);
    expect(refusal('cancel-runs', { dueAfter: '2026-01-02T00:00:00Z', dueBefore: '2026-01-01T00:00:00Z' })).toEqual([
      'validation-error',
      'filter.dueAfter',
    ]);
    expect(refusal('cancel-runs', { job: 'ops.sync', state: 'retry_wait', error: 'x' })).toBeUndefined();
  });

  it.each([
    ['its own team, job and state', 'ops', { job: 'ops.sync', state: 'scheduled' }, true],
    ['ready is the stored scheduled state: time passing keeps it selected', 'ops', { state: 'ready' }, true],
    ['another team', 'other', {}, false],
    ['every team (the admin)', null, {}, true],
    ['another job', 'ops', { job: 'ops.other' }, false],
    ['another state', 'ops', { state: 'retry_wait' }, false],
    ['due before the range', 'ops', { dueAfter: '2026-03-15T02:00:00.001Z' }, false],
    ['due at the range start', 'ops', { dueAfter: '2026-03-15T02:00:00.000Z' }, true],
    ['an error it does not have', 'ops', { error: 'timeout' }, false],
  ] as const)('cancel-runs, a waiting run: %s', (_, team, filter, selected) => {
    expect(runStillSelected('cancel-runs', team, filter, snapshotAt, waiting)).toBe(selected);
  });

  it('cancel-runs leaves runs that moved on: leased, cancelled, dead', () => {
    for (const status of ['leased', 'cancelled', 'succeeded'] as const)
      expect(runStillSelected('cancel-runs', 'ops', {}, snapshotAt, { ...waiting, status })).toBe(false);
    expect(runStillSelected('cancel-runs', 'ops', {}, snapshotAt, dead)).toBe(false);
  });

  it('replay-dead and discard-dead take dead, kept runs that died before the snapshot, by error in any case', () => {
    expect(runStillSelected('replay-dead', 'ops', { error: 'timeout' }, snapshotAt, dead)).toBe(true);
    expect(runStillSelected('discard-dead', 'ops', { error: 'disk' }, snapshotAt, dead)).toBe(false);
    expect(runStillSelected('replay-dead', 'ops', {}, snapshotAt, { ...dead, discarded: true })).toBe(false);
    expect(runStillSelected('replay-dead', 'ops', {}, snapshotAt, waiting)).toBe(false);
    // Replayed and dead again after the snapshot: another death, not this operation's to replay.
    expect(runStillSelected('replay-dead', 'ops', {}, new Date('2026-03-15T03:00:00Z'), dead)).toBe(false);
  });

  it("keeps a job its team's and its queue's", () => {
    const job = { name: 'ops.sync', team: 'ops', queue: 'ops' } as Parameters<typeof jobStillSelected>[2];
    expect(jobStillSelected('ops', { queue: 'ops' }, job)).toBe(true);
    expect(jobStillSelected('ops', { queue: 'nightly' }, job)).toBe(false);
    expect(jobStillSelected('other', {}, job)).toBe(false);
    expect(jobStillSelected(null, { job: 'ops.sync' }, job)).toBe(true);
  });

  it.each(BULK_STATUSES.map((s) => [s]))('stop and resume of a %s operation', (status) => {
    const outcome = (decision: () => unknown): unknown => {
      try {
        return decision();
      } catch (err) {
        return (err as DomainError).code;
      }
    };
    const expected = {
      running: ['stopping', null],
      stopping: ['stopping', 'running'],
      stopped: [null, 'running'],
      done: ['invalid-transition', 'invalid-transition'],
      failed: ['invalid-transition', 'running'],
    }[status];
    expect([outcome(() => decideStop(status)), outcome(() => decideResume(status))]).toEqual(expected);
  });
});
