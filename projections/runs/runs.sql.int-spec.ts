import type { PresentRun } from '@chronicle/domain';
import { createTestDatabase, planNodes, queryPlan, type TestDatabase } from '@chronicle/testing';
import { findRunRevisions, findRunSnapshots, runRevisionsQuery, runsInsert, runsUpdate } from './runs.sql';

/**
 * Looking runs up by id, and inserting new ones, on tables as the hot path leaves them: thousands of
 * rows in the live partition and in today's, never analyzed (autovacuum may be off, and the scheduler's
 * statistics pass runs every few seconds at best). Each run is found by its key, whatever the size.
 */
describe('runs by id', () => {
  let db: TestDatabase;
  const ROWS = 5_000;

  /** Rows straight into the table: even ids live (leased, revision 1), odd ones finished today (revision 2). */
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.pool.query(
      `INSERT INTO runs (run_id, team, job, queue, priority, state, available_at, due_at, attempt, attempt_limit, revision,
                         definition, finished_at, finished_on)
       SELECT 'run_' || g, 'ops', 'ops.job', 'ops', 'default', CASE WHEN g % 2 = 0 THEN 'leased' ELSE 'succeeded' END,
              now(), now(), 1, 3, CASE WHEN g % 2 = 0 THEN 1 ELSE 2 END,
              jsonb_build_object('runId', 'run_' || g, 'job', 'ops.job', 'team', 'ops', 'queue', 'ops', 'priority', 'default',
                                 'dueAt', now(), 'payload', '{}'::jsonb, 'retry', jsonb_build_object('maxAttempts', 3)),
              CASE WHEN g % 2 = 0 THEN NULL ELSE now() END,
              CASE WHEN g % 2 = 0 THEN 'infinity'::date ELSE (now() AT TIME ZONE 'UTC')::date END
         FROM generate_series(1, $1) g`,
      [2 * ROWS],
    );
  });
  afterAll(() => db?.drop());

  /** The plan's node types and the indexes (or else the tables) they read. */
  async function planOf(query: { text: string; values: unknown[] }): Promise<string[]> {
    return planNodes(await queryPlan(db.pool, query)).map((node) =>
      `${node['Node Type']} ${node['Index Name'] ?? node['Relation Name'] ?? ''}`.trim(),
    );
  }

  it('finds live and finished runs with the revisions their rows reflect, and leaves out the unknown', async () => {
    const revisions = await findRunRevisions(db.pool, ['run_2', 'run_3', 'run_2', 'run_missing']);
    expect(Object.fromEntries(revisions)).toEqual({ run_2: 1, run_3: 2 });
    const snapshots = await findRunSnapshots(db.pool, ['run_3', 'run_4', 'run_missing']);
    expect(snapshots.map((r) => [r.definition.runId, r.status, r.revision]).sort()).toEqual([
      ['run_3', 'succeeded', 2],
      ['run_4', 'leased', 1],
    ]);
  });

  it('probes each id by key, live partition first, without reading a partition whole', async () => {
    const ids = Array.from({ length: 400 }, (_, i) => `run_${i + 1}`);
    const plan = await planOf(runRevisionsQuery(ids));
    expect(plan).toContain('Index Scan runs_live_pkey');
    expect(plan.filter((n) => n.startsWith('Seq Scan'))).toEqual([]);
    expect(plan.indexOf('Index Scan runs_live_pkey')).toBeLessThan(plan.findIndex((n) => /_d\d{8}_pkey$/.test(n)));
  });

  describe('new runs', () => {
    /** A run as its RunScheduled leaves it, modelled on a row of the table. */
    let template: PresentRun;
    beforeAll(async () => {
      template = (await findRunSnapshots(db.pool, ['run_4']))[0]!;
    });
    const scheduled = (runId: string): PresentRun => ({
      ...template,
      status: 'scheduled',
      revision: 0,
      attempt: 0,
      lease: null,
      definition: { ...template.definition, runId },
    });

    it("writes a new run's row and listing row, and never a second row of a run that has one", async () => {
      // run_1 finished today, run_2 is live at a later revision (a projector wrote it first): both are left as they are.
      await db.pool.query(runsInsert(['run_new', 'run_1', 'run_2'].map(scheduled)));
      const { rows } = await db.pool.query<{ run_id: string; state: string; revision: string; listed: boolean }>(
        `SELECT r.run_id, r.state, r.revision, EXISTS (SELECT 1 FROM run_listing l WHERE l.run_id = r.run_id) AS listed
           FROM runs r WHERE r.run_id = ANY($1::text[]) ORDER BY r.run_id`,
        [['run_new', 'run_1', 'run_2']],
      );
      expect(rows).toEqual([
        { run_id: 'run_1', state: 'succeeded', revision: '2', listed: false },
        { run_id: 'run_2', state: 'leased', revision: '1', listed: false },
        { run_id: 'run_new', state: 'scheduled', revision: '0', listed: true },
      ]);
    });

    it('checks for an existing row by key, not by reading the live partition whole', async () => {
      const batch = Array.from({ length: 1_000 }, (_, i) => scheduled(`run_batch_${i}`));
      const plan = await planOf(runsInsert(batch));
      expect(plan.filter((n) => n.startsWith('Seq Scan') || n.startsWith('Hash'))).toEqual([]);
      expect(plan).toContainEqual(expect.stringMatching(/ runs_live_pkey$/));
      // The days that can hold a run finished since this statement began, and no other (the migration
      // made partitions for a week ahead).
      const day = (offset: number): string =>
        new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
      const days = plan.flatMap((n) => /runs_d(\d{8})_pkey$/.exec(n)?.[1] ?? []);
      expect([...new Set(days)].sort()).toEqual([day(-1), day(0), day(1)]);
    });
  });

  describe('runs that finish', () => {
    /**
     * The live runs' listing rows, in a live listing partition as a drain leaves it: statistics taken
     * when most of its pages held rows already moved out (dead, not yet vacuumed).
     */
    beforeAll(async () => {
      await db.pool.query(
        `INSERT INTO run_listing (run_id, team, job, queue, due_at, finished_on)
         SELECT run_id, team, job, queue, due_at, finished_on FROM runs WHERE finished_on = 'infinity'
         ON CONFLICT DO NOTHING`,
      );
      await db.pool.query(
        `INSERT INTO run_listing (run_id, team, job, queue, due_at, finished_on)
         SELECT 'run_gone_' || g, 'ops', 'ops.job', 'ops', now(), 'infinity' FROM generate_series(1, $1) g`,
        [4 * ROWS],
      );
      await db.pool.query(`DELETE FROM run_listing WHERE run_id LIKE 'run_gone_%'`);
      await db.pool.query('ANALYZE run_listing_live');
    });

    /** Live runs (even ids) as their completion leaves them. */
    async function succeeded(runIds: readonly string[]): Promise<PresentRun[]> {
      const finishedAt = new Date().toISOString();
      return (await findRunSnapshots(db.pool, runIds)).map((run) => ({
        ...run,
        status: 'succeeded',
        revision: run.revision + 1,
        lease: null,
        finishedAt,
      }));
    }

    it('writes their rows and moves their listing rows, each found by its key', async () => {
      const ids = Array.from({ length: 100 }, (_, i) => `run_${2 * (i + 1)}`);
      const nodes = planNodes(await queryPlan(db.pool, runsUpdate(await succeeded(ids))));
      const reads = nodes.filter((n) => /^(runs|run_listing)_live/.test(n['Index Name'] ?? n['Relation Name'] ?? ''));
      // Index probes by run id into both live partitions, and no other read of them (a Seq Scan, or a
      // bitmap of the whole partition by its key's second column).
      expect(reads.map((n) => `${n['Node Type']} ${n['Index Name'] ?? n['Relation Name']}`).sort()).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/Index Scan run_listing_live_pkey$/),
          expect.stringMatching(/Index Scan runs_live_pkey$/),
        ]),
      );
      for (const read of reads.filter((n) => n['Node Type'] !== 'Bitmap Heap Scan'))
        expect(`${read['Node Type']} ${read['Index Cond'] ?? ''}`).toMatch(/run_id = ANY/);

      await db.pool.query(runsUpdate(await succeeded(ids.slice(0, 3))));
      const { rows } = await db.pool.query<{ run_id: string; listed_live: boolean; run_live: boolean }>(
        `SELECT l.run_id, l.finished_on = 'infinity' AS listed_live,
                EXISTS (SELECT 1 FROM runs r WHERE r.run_id = l.run_id AND r.finished_on = 'infinity') AS run_live
           FROM run_listing l WHERE l.run_id = ANY($1::text[]) ORDER BY l.run_id`,
        [ids.slice(0, 4)],
      );
      expect(rows).toEqual([
        { run_id: 'run_2', listed_live: false, run_live: false },
        { run_id: 'run_4', listed_live: false, run_live: false },
        { run_id: 'run_6', listed_live: false, run_live: false },
        { run_id: 'run_8', listed_live: true, run_live: true },
      ]);
    });
  });
});
