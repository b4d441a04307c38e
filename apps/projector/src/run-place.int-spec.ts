import type { RecordedEvent } from '@chronicle/event-store';
import {
  auditProjection,
  lagQuantileSeconds,
  listActivityMinutes,
  runActivityProjection,
} from '@chronicle/projections';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';

/**
 * A run's events after its RunScheduled record where the run belongs (RunPlaceMetadata): the audit
 * index and the activity counts file them by that, with no row of the run to read. The runs here have
 * no row at all (as after retention dropped it), so only what the events record can place them.
 */
describe('run events that record their place', () => {
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

  beforeAll(async () => {
    db = await createTestDatabase();
    const events = [
      event('run-r-placed', 1n, 'RunLeased', leased(1, 300), placed),
      event('run-r-placed', 2n, 'RunSucceeded', succeeded, placed),
      // Recorded before events named their place: nothing to file it by without the run's row.
      event('run-r-older', 1n, 'RunLeased', leased(1, 300), {}),
    ];
    await runActivityProjection.apply(db.pool, events);
    await auditProjection.apply(db.pool, events);
  });
  afterAll(() => db?.drop());

  it('counts the events under the team, queue and priority they record, the lag from the due time they record', async () => {
    const rows = await listActivityMinutes(db.pool, 'ops', 'ops-nightly', 60);
    expect(rows.map((r) => r.priority)).toEqual(['bulk']);
    expect(rows.reduce((sum, r) => sum + r.leased, 0)).toBe(1);
    expect(rows.reduce((sum, r) => sum + r.succeeded, 0)).toBe(1);
    // 300 ms late: the 250-500 ms bucket.
    expect(lagQuantileSeconds(rows[0]!.lag_counts, 0.5)).toBeGreaterThan(0.25);
    expect(lagQuantileSeconds(rows[0]!.lag_counts, 0.5)).toBeLessThanOrEqual(0.5);
    // The older event, with no row to place it, is not counted anywhere.
    const everyone = await listActivityMinutes(db.pool, undefined, undefined, 60);
    expect(everyone.reduce((sum, r) => sum + r.leased, 0)).toBe(1);
  });

  it("leaves runs' events out of the audit index: the audit trail reads them from the log, by the team they record", async () => {
    const { rows } = await db.pool.query('SELECT stream_id FROM audit_events');
    expect(rows).toEqual([]);
  });
});
