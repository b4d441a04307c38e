import type { RecordedEvent } from '@chronicle/event-store';
import {
  auditProjection,
  lagQuantileSeconds,
  listActivityMinutes,
  runActivityProjection,
} from '@chronicle/projections';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';

/**
 * Where a run's counted events belong (team, queue, priority, due time): in its RunScheduled's data,
 * which the activity counts remember as it passes, so that its later events, which record only the
 * team, are filed with no row of the run to read. Events recorded while every event repeated the place
 * (RunPlaceMetadata) are filed by that. The runs here have no row at all (as after retention dropped
 * it), so only what the log holds can place them.
 */
describe('run events placed by the log alone', () => {
  let db: TestDatabase;
  const dueAt = Date.now() - 2_000;
  const placed = { team: 'ops', queue: 'ops-nightly', priority: 'bulk', dueAt: new Date(dueAt).toISOString() };
  let position = 100n;

  function event(streamId: string, revision: bigint, type: string, data: unknown, metadata: object): RecordedEvent {
    position += 1n;
    return {
      id: `00000000-0000-4000-8000-${position.toString().padStart(12, '0')}`,
      streamId,
      revision,
      position: { commit: position, prepare: position },
      type,
      data,
      metadata: { actor: 'worker:ops', schemaVersion: 2, ...metadata },
      recordedAt: new Date(),
    };
  }

  const leased = (attempt: number, lagMs: number) => ({
    attempt,
    fencingToken: 1,
    workerId: 'w1',
    leasedAt: new Date(dueAt + lagMs).toISOString(),
    leaseExpiresAt: new Date(dueAt + lagMs + 60_000).toISOString(),
  });
  const succeeded = { attempt: 1, fencingToken: 1, completedAt: new Date().toISOString() };

  const scheduled = (team: string, queue: string) => ({
    runId: 'x',
    job: `${team}.job`,
    team,
    queue,
    priority: 'bulk',
    dueAt: placed.dueAt,
    payload: null,
    idempotencyKey: 'k',
    retry: { maxAttempts: 1, baseSeconds: 1, maxSeconds: 1 },
    timeoutSeconds: 60,
    source: 'api',
    jobVersion: 1,
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    // Its RunScheduled in one batch, its later events (the team alone in their metadata) in the next.
    await runActivityProjection.apply(db.pool, [
      event('run-r-scheduled', 0n, 'RunScheduled', scheduled('ops', 'ops-nightly'), { team: 'ops' }),
    ]);
    const events = [
      event('run-r-scheduled', 1n, 'RunLeased', leased(1, 300), { team: 'ops' }),
      event('run-r-scheduled', 2n, 'RunSucceeded', succeeded, { team: 'ops' }),
      // Recorded while every event repeated the run's place.
      event('run-r-placed', 1n, 'RunLeased', leased(1, 300), placed),
      // Recorded before events named their place, its RunScheduled not seen: nothing to file it by.
      event('run-r-older', 1n, 'RunLeased', leased(1, 300), {}),
    ];
    await runActivityProjection.apply(db.pool, events);
    await auditProjection.apply(db.pool, events);
  });
  afterAll(() => db?.drop());

  it("counts the events under the team, queue and priority of the run's RunScheduled or those they record, the lag from its due time", async () => {
    const rows = await listActivityMinutes(db.pool, 'ops', 'ops-nightly', 60);
    expect(rows.map((r) => r.priority)).toEqual(['bulk']);
    expect(rows.reduce((sum, r) => sum + r.leased, 0)).toBe(2);
    expect(rows.reduce((sum, r) => sum + r.succeeded, 0)).toBe(1);
    // 300 ms late, both: the 250-500 ms bucket.
    expect(lagQuantileSeconds(rows[0]!.lag_counts, 0.5)).toBeGreaterThan(0.25);
    expect(lagQuantileSeconds(rows[0]!.lag_counts, 0.5)).toBeLessThanOrEqual(0.5);
    // The older event, with no row to place it, is not counted anywhere.
    const everyone = await listActivityMinutes(db.pool, undefined, undefined, 60);
    expect(everyone.reduce((sum, r) => sum + r.leased, 0)).toBe(2);
  });

  it("leaves runs' events out of the audit index: the audit trail reads them from the log, by the team they record", async () => {
    const { rows } = await db.pool.query('SELECT stream_id FROM audit_events');
    expect(rows).toEqual([]);
  });
});
