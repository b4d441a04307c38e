import { BULK_ACTIONS, BULK_STATUSES } from '@chronicle/domain';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { claimOperation, insertOperation, saveProgress, stopOperation } from './bulk-operations.sql';

/** The operations' table against the domain's words, and what its holders may do to it, on PostgreSQL. */
describe('bulk_operations', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("mirrors the domain's actions and statuses in its CHECK constraints", async () => {
    const { rows } = await db.pool.query<{ name: string; def: string }>(
      `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
        WHERE conrelid = 'bulk_operations'::regclass AND contype = 'c' ORDER BY conname`,
    );
    const values = (def: string): string[] => [...def.matchAll(/'([^']+)'::text/g)].map((m) => m[1]!);
    expect(rows.map((r) => [r.name, values(r.def)])).toEqual([
      ['bulk_operations_action_check', [...BULK_ACTIONS]],
      ['bulk_operations_status_check', [...BULK_STATUSES]],
    ]);
  });

  it("is taken over only when its holder's heartbeat is stale, and the old holder's saves then change nothing", async () => {
    const row = await insertOperation(db.pool, {
      id: 'bulk_00000000000000000000000000000001',
      team: 'ops',
      actor: 'team:ops',
      action: 'cancel-runs',
      filter: {},
      snapshot_at: new Date(),
      cursors: { control: { after: null, matched: 1, done: false } },
      matched: 1,
      owner: 'a',
      correlation_id: null,
    });
    expect(await claimOperation(db.pool, 'b', 30, [])).toBeUndefined();
    // The holder asked to stop while alive: stopping, for it to stop after its batch.
    expect((await stopOperation(db.pool, row.id, 30)).status).toBe('stopping');
    await db.pool.query("UPDATE bulk_operations SET heartbeat_at = now() - interval '31 seconds' WHERE id = $1", [
      row.id,
    ]);
    const taken = await claimOperation(db.pool, 'b', 30, []);
    expect(taken).toMatchObject({ id: row.id, owner: 'b', status: 'stopping' });
    const counts = { processed: 1, acted: 1, skipped: 0 };
    expect(await saveProgress(db.pool, row.id, 'a', {}, counts)).toBeUndefined();
    expect(await saveProgress(db.pool, row.id, 'b', {}, counts)).toBe('stopping');
  });
});
