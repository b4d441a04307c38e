import type { PresentRun } from '@chronicle/domain';
import { createTestDatabase, planNodes, queryPlan, type TestDatabase } from '@chronicle/testing';
import { findRunRevisions, findRunSnapshots, runRevisionsQuery, runsInsert, runsUpdate, runsUpsert } from './runs.sql';

/**
 * Looking runs up by id, and inserting new ones, on tables as the hot path leaves them: thousands of
 * rows in today's partition and in runs_kept, never analyzed (autovacuum may be off, and the scheduler's
 * statistics pass runs every few seconds at best). Each run is found by its key, whatever the size.
 */
describe('runs by id', () => {
  let db: TestDatabase;
  const ROWS = 5_000;

  /**
   * Rows straight into the table: even ids due today and leased (revision 1), in today's partition; odd ones
   * finished (revision 2) and kept past their day by retention, in runs_kept.
   */
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.pool.query(
      `INSERT INTO runs (run_id, team, job, queue, priority, state, available_at, due_at, attempt, attempt_limit, revision,
                         finished_at, kept_on)
       SELECT 'run_' || g, 'ops', 'ops.job', 'ops', 'default', CASE WHEN g % 2 = 0 THEN 'leased' ELSE 'succeeded' END,
              now(), now(), 1, 3, CASE WHEN g % 2 = 0 THEN 1 ELSE 2 END,
              CASE WHEN g % 2 = 0 THEN NULL ELSE now() END,
              CASE WHEN g % 2 = 0 THEN (now() AT TIME ZONE 'UTC')::date ELSE 'infinity'::date END
         FROM generate_series(1, $1) g`,
      [2 * ROWS],
    );
    // Each run's definition, written once in its listing row (migrations/0028).
    await db.pool.query(
      `INSERT INTO run_listing (run_id, team, job, queue, due_at, kept_on, definition)
       SELECT run_id, team, job, queue, due_at, kept_on,
              jsonb_build_object('runId', run_id, 'job', 'ops.job', 'team', 'ops', 'queue', 'ops', 'priority', 'default',
                                 'dueAt', due_at, 'payload', '{}'::jsonb, 'retry', jsonb_build_object('maxAttempts', 3))
         FROM runs`,
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

  it('probes each id by key, the recent days and the kept runs first, without reading a partition whole', async () => {
    const ids = Array.from({ length: 400 }, (_, i) => `run_${i + 1}`);
    const plan = await planOf(runRevisionsQuery(ids));
    // An index probe of today's partition's key (a bitmap of it for each id, or a plain scan), and of runs_kept's.
    expect(plan).toContainEqual(expect.stringMatching(new RegExp(`^(Bitmap )?Index Scan runs_d${day(0)}_pkey$`)));
    expect(plan).toContainEqual(expect.stringMatching(/^(Bitmap )?Index Scan runs_kept_pkey$/));
    expect(plan.filter((n) => n.startsWith('Seq Scan'))).toEqual([]);
    // The recent days and runs_kept in the first arm; the default partition in the second too.
    const kept = plan.findIndex((n) => n.endsWith('runs_kept_pkey'));
    const unsorted = plan.map((n) => n.endsWith('runs_unsorted_pkey')).lastIndexOf(true);
    expect(kept).toBeLessThan(unsorted);
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
      // run_1 finished and is kept, run_2 is leased at a later revision (a projector wrote it first): both
      // are left as they are.
      await db.pool.query(runsInsert(['run_new', 'run_1', 'run_2'].map(scheduled)));
      const { rows } = await db.pool.query<{ run_id: string; state: string; revision: string; listed: boolean }>(
        `SELECT r.run_id, r.state, r.revision, (SELECT count(*)::int FROM run_listing l WHERE l.run_id = r.run_id) AS listed
           FROM runs r WHERE r.run_id = ANY($1::text[]) ORDER BY r.run_id`,
        [['run_new', 'run_1', 'run_2']],
      );
      expect(rows).toEqual([
        { run_id: 'run_1', state: 'succeeded', revision: '2', listed: 1 },
        { run_id: 'run_2', state: 'leased', revision: '1', listed: 1 },
        { run_id: 'run_new', state: 'scheduled', revision: '0', listed: 1 },
      ]);
      expect((await findRunSnapshots(db.pool, ['run_new']))[0]?.definition.runId).toBe('run_new');
    });

    it("writes the rows of runs created in the append's own transaction as plain inserts, their ready rows with them", async () => {
      const write = runsInsert(['run_alone_1', 'run_alone_2'].map(scheduled), { alone: true });
      expect(write.text).not.toMatch(/ON CONFLICT/);
      await db.pool.query(write);
      const { rows } = await db.pool.query<{ run_id: string; state: string; listed: number; ready: string }>(
        `SELECT r.run_id, r.state, (SELECT count(*)::int FROM run_listing l WHERE l.run_id = r.run_id) AS listed,
                (SELECT q.state FROM ready_runs q WHERE q.run_id = r.run_id) AS ready
           FROM runs r WHERE r.run_id LIKE 'run_alone_%' ORDER BY r.run_id`,
      );
      expect(rows).toEqual([
        { run_id: 'run_alone_1', state: 'scheduled', listed: 1, ready: 'scheduled' },
        { run_id: 'run_alone_2', state: 'scheduled', listed: 1, ready: 'scheduled' },
      ]);
    });

    it('checks for an existing row by key, in the two partitions it can be in, never reading one whole', async () => {
      const batch = Array.from({ length: 1_000 }, (_, i) => scheduled(`run_batch_${i}`));
      const plan = await planOf(runsInsert(batch));
      // The new rows' listing rows join them to their definitions in the statement's own rows (a hash of
      // those is fine); no table is read whole, nor hashed for an anti join.
      expect(plan.filter((n) => n.startsWith('Seq Scan') || n.startsWith('Hash Anti'))).toEqual([]);
      const reads = plan.filter((n) => / runs_\w+$/.test(n));
      expect(reads.length).toBeGreaterThan(0);
      for (const read of reads) expect(read).toMatch(/^Index (Only )?Scan runs_\w+_pkey$/);
    });
    it('updates a batch due on more days than the statement names, in every partition it probes', async () => {
      const dueOn = (n: number): PresentRun => {
        const run = { ...template, definition: { ...template.definition, runId: `run_day_${n}` } };
        return {
          ...run,
          definition: { ...run.definition, dueAt: new Date(Date.now() + n * 86_400_000).toISOString() },
        };
      };
      const spread = [1, 2, 3, 4].map(dueOn);
      await db.pool.query(runsInsert(spread.map((r) => ({ ...r, status: 'scheduled', revision: 0, lease: null }))));
      expect(runsUpdate(spread).name).toBe('runs_update_any_day');
      expect(runsUpdate(spread.slice(0, 3)).name).toBe('runs_update');
      const lease = {
        fencingToken: 1,
        workerId: 'w',
        leasedAt: new Date().toISOString(),
        expiresAt: new Date().toISOString(),
      };
      await db.pool.query(runsUpdate(spread.map((r) => ({ ...r, status: 'leased', revision: 1, lease }))));
      const { rows } = await db.pool.query<{ run_id: string; state: string; at: string }>(
        `SELECT run_id, state, tableoid::regclass::text AS at FROM runs WHERE run_id LIKE 'run_day_%' ORDER BY run_id`,
      );
      expect(rows).toEqual(
        [1, 2, 3, 4].map((n) => ({ run_id: `run_day_${n}`, state: 'leased', at: `runs_d${day(n)}` })),
      );
    });
  });

  describe('runs that finish', () => {
    /** Leased runs (even ids) as their completion leaves them. */
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

    it('updates their rows where they are, each found by its key in its own partition, and moves nothing', async () => {
      const ids = Array.from({ length: 100 }, (_, i) => `run_${2 * (i + 1)}`);
      const client = await db.pool.connect();
      try {
        await client.query('BEGIN');
        const nodes = planNodes(await queryPlan(client, runsUpdate(await succeeded(ids)), { analyze: true }));
        await client.query('ROLLBACK');
        // The partitions read: today's (where the runs are) and runs_kept, by index probes of their keys; the
        // others are pruned as the statement starts.
        const reads = nodes.filter(
          (n) => /^runs_/.test(n['Index Name'] ?? n['Relation Name'] ?? '') && (n['Actual Loops'] ?? 0) > 0,
        );
        const partitions = new Set(reads.map((n) => (n['Index Name'] ?? n['Relation Name'])!.replace(/_pkey$/, '')));
        expect(partitions).toEqual(new Set([`runs_d${day(0)}`, 'runs_kept']));
        for (const index of reads.flatMap((n) => n['Index Name'] ?? [])) expect(index).toMatch(/_pkey$/);
        // A transition leaves the listing rows as they were written: no listing row is read, none scanned.
        const listing = nodes.filter(
          (n) => /Scan$/.test(n['Node Type']) && /^run_listing/.test(n['Index Name'] ?? n['Relation Name'] ?? ''),
        );
        expect(listing.length).toBeGreaterThan(0);
        expect(listing.filter((n) => n['Node Type'] === 'Seq Scan' || (n['Actual Loops'] ?? 0) > 0)).toEqual([]);
      } finally {
        client.release();
      }

      await db.pool.query(runsUpdate(await succeeded(ids.slice(0, 3))));
      const { rows } = await db.pool.query<{ run_id: string; state: string; at: string }>(
        `SELECT run_id, state, tableoid::regclass::text AS at FROM runs WHERE run_id = ANY($1::text[]) ORDER BY run_id`,
        [ids.slice(0, 4)],
      );
      expect(rows).toEqual([
        { run_id: 'run_2', state: 'succeeded', at: `runs_d${day(0)}` },
        { run_id: 'run_4', state: 'succeeded', at: `runs_d${day(0)}` },
        { run_id: 'run_6', state: 'succeeded', at: `runs_d${day(0)}` },
        { run_id: 'run_8', state: 'leased', at: `runs_d${day(0)}` },
      ]);
    });
  });
});

/** The UTC day `offset` days from now, as partitions are named (YYYYMMDD). */
function day(offset: number): string {
  return new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
}

describe("the claim's queue of waiting runs (ready_runs)", () => {
  let db: TestDatabase;
  beforeAll(async () => (db = await createTestDatabase()));
  afterAll(() => db?.drop());

  it('holds a run exactly while it waits, with its time, whichever statement writes its row', async () => {
    const due = new Date(Date.now() - 60_000).toISOString();
    const run: PresentRun = {
      status: 'scheduled',
      revision: 0,
      definition: {
        runId: 'run_q',
        job: 'ops.job',
        team: 'ops',
        queue: 'ops',
        priority: 'default',
        dueAt: due,
        payload: {},
        idempotencyKey: 'k_q',
        retry: { maxAttempts: 3, baseSeconds: 1, maxSeconds: 1 },
        timeoutSeconds: 60,
        source: 'api',
        jobVersion: 1,
      },
      attempt: 0,
      attemptLimit: 3,
      availableAt: due,
      lease: null,
      lastError: null,
      death: null,
      discarded: false,
      finishedAt: null,
    };
    const queued = async (): Promise<Array<{ run_id: string; available_at: string }>> =>
      (
        await db.pool.query<{ run_id: string; available_at: string }>(
          'SELECT run_id, available_at::text FROM ready_runs ORDER BY run_id',
        )
      ).rows;
    const at = async (iso: string): Promise<string> =>
      (await db.pool.query<{ t: string }>('SELECT $1::timestamptz::text AS t', [iso])).rows[0]!.t;
    await db.pool.query(runsInsert([run]));
    expect(await queued()).toEqual([{ run_id: 'run_q', available_at: await at(due) }]);
    const leasedAt = new Date().toISOString();
    const leased: PresentRun = {
      ...run,
      status: 'leased',
      revision: 1,
      attempt: 1,
      lease: { fencingToken: 1, workerId: 'w', leasedAt, expiresAt: leasedAt },
    };
    await db.pool.query(runsUpdate([leased]));
    expect(await queued()).toEqual([]);
    const retryAt = new Date(Date.now() + 30_000).toISOString();
    await db.pool.query(
      runsUpsert([{ ...leased, status: 'retry_wait', revision: 2, lease: null, availableAt: retryAt }]),
    );
    expect(await queued()).toEqual([{ run_id: 'run_q', available_at: await at(retryAt) }]);
    await db.pool.query(
      runsUpdate([{ ...leased, status: 'cancelled', revision: 3, lease: null, finishedAt: retryAt }]),
    );
    expect(await queued()).toEqual([]);
  });
});

describe('a debounced run (RunDebounced)', () => {
  let db: TestDatabase;
  beforeAll(async () => (db = await createTestDatabase()));
  afterAll(() => db?.drop());

  it('keeps its debounce key while it waits, and its listing takes the newest payload, guarded by revision', async () => {
    const due = new Date(Date.now() + 60_000).toISOString();
    const run: PresentRun = {
      status: 'scheduled',
      revision: 0,
      definition: {
        runId: 'run_d',
        job: 'ops.job',
        team: 'ops',
        queue: 'ops',
        priority: 'default',
        dueAt: due,
        payload: { v: 1 },
        idempotencyKey: 'k_d',
        retry: { maxAttempts: 3, baseSeconds: 1, maxSeconds: 1 },
        timeoutSeconds: 60,
        source: 'api',
        jobVersion: 1,
        debounceKey: 'doc',
      },
      attempt: 0,
      attemptLimit: 3,
      availableAt: due,
      lease: null,
      lastError: null,
      death: null,
      discarded: false,
      finishedAt: null,
    };
    const row = async () =>
      (
        await db.pool.query<{ key: string | null; payload: unknown; available_at: Date; queued: Date | null }>(
          `SELECT r.debounce_key AS key, l.definition->'payload' AS payload, r.available_at,
                  (SELECT q.available_at FROM ready_runs q WHERE q.run_id = r.run_id) AS queued
             FROM runs r JOIN run_listing l USING (run_id, kept_on) WHERE r.run_id = 'run_d'`,
        )
      ).rows[0]!;
    await db.pool.query(runsInsert([run]));
    expect(await row()).toMatchObject({ key: 'doc', payload: { v: 1 } });

    const later = new Date(Date.now() + 120_000).toISOString();
    const moved = (revision: number, v: number): PresentRun => ({
      ...run,
      revision,
      availableAt: later,
      definition: { ...run.definition, payload: { v } },
    });
    await db.pool.query(runsUpdate([moved(1, 2)], new Set(['run_d'])));
    expect(await row()).toEqual({
      key: 'doc',
      payload: { v: 2 },
      available_at: new Date(later),
      queued: new Date(later),
    });
    // An older revision (a projector behind) writes neither the row nor its listing; without the run named
    // redefined, a newer one leaves the listing as it is.
    await db.pool.query(runsUpsert([moved(1, 3)], new Set(['run_d'])));
    await db.pool.query(runsUpdate([moved(2, 4)]));
    expect((await row()).payload).toEqual({ v: 2 });
    await db.pool.query(runsUpsert([moved(3, 5)], new Set(['run_d'])));
    expect((await row()).payload).toEqual({ v: 5 });

    const leasedAt = new Date().toISOString();
    await db.pool.query(
      runsUpdate([
        {
          ...moved(4, 5),
          status: 'leased',
          attempt: 1,
          lease: { fencingToken: 4, workerId: 'w', leasedAt, expiresAt: later },
        },
      ]),
    );
    expect(await row()).toMatchObject({ key: null, payload: { v: 5 }, queued: null });
  });
});
