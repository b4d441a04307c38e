import { RUN_EVENT_SCHEMA_VERSION } from './run/run-events';
import { currentSchemaVersion, upcastEvent } from './upcasting';

const scheduledV1 = {
  runId: 'run_v1',
  job: 'billing.export',
  team: 'billing',
  queue: 'billing',
  priority: 'default',
  dueAt: '2025-06-01T02:00:00.000Z',
  payload: { month: 5 },
  idempotencyKey: 'run_v1',
  retry: { maxAttempts: 3, baseSeconds: 30, maxSeconds: 1800 },
  timeoutSeconds: 900,
  source: 'api',
};

describe('upcasting', () => {
  it('reads a RunScheduled of version 1 (or of no version) in the shape of today: no job version known', () => {
    expect(RUN_EVENT_SCHEMA_VERSION).toBe(2);
    for (const metadata of [{ schemaVersion: 1 }, {}])
      expect(upcastEvent({ type: 'RunScheduled', data: scheduledV1, metadata })).toEqual({
        type: 'RunScheduled',
        data: { ...scheduledV1, jobVersion: null },
      });
  });

  it('leaves events of today, and types whose shape never changed, as they are', () => {
    const today = { ...scheduledV1, jobVersion: 4 };
    expect(upcastEvent({ type: 'RunScheduled', data: today, metadata: { schemaVersion: 2 } }).data).toBe(today);
    const leased = { attempt: 1, fencingToken: 1, workerId: 'w', leasedAt: 'x', leaseExpiresAt: 'y' };
    expect(upcastEvent({ type: 'RunLeased', data: leased, metadata: { schemaVersion: 1 } }).data).toBe(leased);
    expect(currentSchemaVersion('JobDefined')).toBe(1);
    expect(currentSchemaVersion('SomethingElse')).toBe(1);
  });
});
