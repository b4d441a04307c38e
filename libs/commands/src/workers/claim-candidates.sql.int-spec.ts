import { DEFAULT_PRIORITY_WEIGHTS } from '@chronicle/domain';
import { PostgresEventStore } from '@chronicle/event-store';
import { createTestDatabase, runDecisions, seedRuns, testJob, type TestDatabase } from '@chronicle/testing';
import { findClaimCandidates } from './claim-candidates.sql';
import { claimReadyRuns } from './claim-ready-runs';

const platform = { kind: 'worker', team: null, queues: ['ops'] } as const;
const request = (max: number) => ({ queues: ['ops'], max, leaseSeconds: 30, workerId: 'w' });
const dueAt = new Date(Date.now() - 60_000);

/** A claim over several servers, on one of them: the candidates it reads, and the chosen runs it claims. */
describe('a claim over several servers, on one of them', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const limited = testJob({ name: 'ops.limited', concurrency: 2 });
  const free = testJob({ name: 'ops.free' });
  const single = testJob({ name: 'ops.single', concurrency: 1 });

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
    await seedRuns(
      db.pool,
      store,
      [limited, free, single],
      [
        ...[1, 2, 3, 4, 5].map((n) => ({ job: limited, runId: `run_l${n}`, dueAt: new Date(dueAt.getTime() + n) })),
        ...[1, 2, 3].map((n) => ({ job: free, runId: `run_f${n}`, dueAt: new Date(dueAt.getTime() + 10 + n) })),
        ...[1, 2].map((n) => ({ job: single, runId: `run_s${n}`, dueAt: new Date(dueAt.getTime() + 20 + n) })),
      ],
    );
  });
  afterAll(() => db?.drop());

  it('reads the candidates as the claim would, by the grants it is given and locking none', async () => {
    // As on a server runs are kept on, this database has no queue_grants: a platform worker's teams are the grants given.
    expect((await db.pool.query('SELECT 1 FROM queue_grants')).rowCount).toBe(0);
    const scope = { team: null, queues: ['ops'], teamsServed: 1 };
    const options = { limit: 10, skipped: ['run_f3'], prefetchMs: 0 };
    expect(await findClaimCandidates(db.pool, scope, { ...options, grants: [] })).toEqual({
      candidates: [],
      capped: false,
    });

    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const grants = [{ queue: 'ops', team: 'ops', weight: 3 }];
      const found = await findClaimCandidates(client, scope, { ...options, grants });
      // A limited job's runs within its headroom, oldest first; the runs left out stepped over.
      expect(found.candidates.map((c) => c.run_id).sort()).toEqual(['run_f1', 'run_f2', 'run_l1', 'run_l2', 'run_s1']);
      expect(found.candidates.every((c) => c.team === 'ops' && c.priority === 'default' && c.weight === 3)).toBe(true);
      expect(found.candidates.every((c) => c.available_at instanceof Date)).toBe(true);
      expect(found.capped).toBe(true);
      // Nothing locked: a claim meanwhile takes the oldest three (a team's worker: no queue_grants needed).
      const team = { kind: 'worker', team: 'ops', queues: ['ops'] } as const;
      const { leases } = await runDecisions(store, db.pool).unitOfWork((work) =>
        claimReadyRuns(work, team, request(3), DEFAULT_PRIORITY_WEIGHTS),
      );
      expect(leases.map((l) => l.runId).sort()).toEqual(['run_f1', 'run_l1', 'run_l2']);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it("claims the chosen runs that are still ready and free: another's lock, a leased run and a job's limit leave runs out", async () => {
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(run_lock_key($1))', ['run_f2']);
      const runIds = ['run_f1', 'run_f2', 'run_f3', 'run_s1', 'run_s2', 'run_none'];
      const claimed = await runDecisions(store, db.pool).unitOfWork((work) =>
        claimReadyRuns(work, platform, request(runIds.length), { runIds }),
      );
      // run_f1: leased by the claim before; run_f2: locked by another transaction; one of ops.single's two:
      // its limit is 1, and the claim says it left runs out (capped); run_none: no such run.
      const leased = claimed.leases.map((l) => l.runId);
      expect(leased).toHaveLength(2);
      expect(leased).toContain('run_f3');
      expect(leased.filter((runId) => runId.startsWith('run_s'))).toHaveLength(1);
      expect(claimed.capped).toBe(true);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });
});
