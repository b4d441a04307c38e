import { createTestDatabase, planNodes, queryPlan, type TestDatabase } from '@chronicle/testing';
import { listJobs } from './jobs-listing.sql';
import { countQueueRuns } from './queue-stats.sql';
import { listRuns, runsPageSql, type RunsPageQuery } from './runs-listing.sql';

/**
 * The listings' plans on tables of realistic shape: 200,000 runs of 20 teams, 1,000 jobs and 60
 * queues over 30 days, nine in ten succeeded; 50,000 jobs. A page must be a range scan of one index in its order,
 * stopped by LIMIT: never a sort of the runs that match. The runs and their listing are partitioned by the day a
 * run finished (migrations/0018): an index of a partition counts as the table's index it was made from, and the
 * empty partitions (the default ones, the days without runs) are left out of the plans: a scan of one reads
 * nothing, and the planner rightly takes it over an index.
 */
describe('listing queries on 200,000 runs', () => {
  let db: TestDatabase;
  const now = new Date('2026-03-15T12:00:00Z');

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.pool.query(`INSERT INTO teams (id) SELECT 'team-' || lpad(t::text, 2, '0') FROM generate_series(0, 19) t`);
    await db.pool.query(`
      INSERT INTO jobs (name, team, definition, version, paused, revision)
      SELECT 'job-' || j, 'team-' || lpad((j % 20)::text, 2, '0'),
             jsonb_build_object('name', 'job-' || j, 'team', 'team-' || lpad((j % 20)::text, 2, '0'),
                                'queue', 'q-' || (j % 60), 'priority', 'default'),
             1, false, 0
        FROM generate_series(0, 49999) j`);
    await db.pool.query(`DO $$
      DECLARE d date;
      BEGIN
        FOR d IN SELECT generate_series(date '2026-02-10', date '2026-03-16', interval '1 day')::date LOOP
          EXECUTE format('CREATE TABLE runs_d%s PARTITION OF runs FOR VALUES IN (%L)', to_char(d, 'YYYYMMDD'), d);
          EXECUTE format('CREATE TABLE run_listing_d%s PARTITION OF run_listing FOR VALUES IN (%L)', to_char(d, 'YYYYMMDD'), d);
        END LOOP;
      END $$`);
    // States as a busy system has them: most runs finished, a few waiting, running or dead. In short
    // statements: a long writer would hold back every other test's reads of the log (they stop before
    // the oldest transaction still running on the server).
    for (let from = 0; from < 200_000; from += 10_000)
      await db.pool.query(
        `
      INSERT INTO runs (run_id, team, job, queue, priority, state, available_at, due_at, attempt, attempt_limit,
                        dead_at, discarded, revision, finished_at, kept_on, ended)
      SELECT 'run_' || lpad(i::text, 7, '0'), 'team-' || lpad((i % 1000 % 20)::text, 2, '0'), 'job-' || (i % 1000),
             'q-' || (i % 1000 % 60), (ARRAY['critical', 'default', 'bulk'])[1 + i % 3],
             s.state, d.due + CASE WHEN s.state IN ('scheduled', 'retry_wait') THEN interval '1 day' ELSE interval '0' END,
             d.due, 1, 3, CASE WHEN s.state = 'dead' THEN d.due END, false, 1,
             f.at, (d.due AT TIME ZONE 'UTC')::date, CASE WHEN s.state IN ('dead', 'cancelled') THEN s.state END
        FROM generate_series($1::int, $2::int) i
       CROSS JOIN LATERAL (SELECT timestamptz '2026-03-15T12:00:00Z' - (i * interval '13 seconds') AS due) d
       CROSS JOIN LATERAL (SELECT (hashint4(i) & 2147483647) % 100 AS h) h
       CROSS JOIN LATERAL (SELECT CASE WHEN h.h < 90 THEN 'succeeded' WHEN h.h < 95 THEN 'scheduled'
                                       WHEN h.h < 97 THEN 'retry_wait' WHEN h.h < 98 THEN 'leased'
                                       WHEN h.h < 99 THEN 'dead' ELSE 'cancelled' END AS state) s
       CROSS JOIN LATERAL (SELECT CASE WHEN s.state IN ('succeeded', 'cancelled') THEN d.due + interval '1 minute' END AS at) f`,
        [from, from + 9_999],
      );
    for (let from = 0; from < 200_000; from += 20_000)
      await db.pool.query(
        `INSERT INTO run_listing (run_id, team, job, queue, due_at, kept_on, definition)
         SELECT run_id, team, job, queue, due_at, kept_on, jsonb_build_object('runId', run_id, 'job', job) FROM runs
          WHERE run_id >= $1 AND run_id < $2`,
        [`run_${String(from).padStart(7, '0')}`, `run_${String(from + 20_000).padStart(7, '0')}`],
      );
    // The work not done, where the write-through keeps it.
    await db.pool.query(
      `INSERT INTO ready_runs (run_id, queue, team, priority, job, available_at, state, due_at)
       SELECT run_id, queue, team, priority, job, available_at, state, due_at FROM runs WHERE state IN ('scheduled', 'retry_wait')`,
    );
    await db.pool.query(
      `INSERT INTO run_leases (run_id, job, team, queue, priority, due_at, lease_expires_at)
       SELECT run_id, job, team, queue, priority, due_at, due_at + interval '5 minutes' FROM runs WHERE state = 'leased'`,
    );
    await db.pool.query('VACUUM ANALYZE runs, run_listing, jobs, ready_runs, run_leases');
    const { rows: parents } = await db.pool.query<{ child: string; parent: string }>(
      `SELECT c.relname AS child, p.relname AS parent FROM pg_inherits i
         JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
        WHERE p.relname IN ('runs', 'run_listing') OR p.relkind = 'I'`,
    );
    for (const { child, parent } of parents) parentOf.set(child, parent);
    const { rows: empty } = await db.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent IN ('runs'::regclass, 'run_listing'::regclass) AND c.reltuples <= 0`,
    );
    for (const { name } of empty) emptyPartitions.add(name);
  }, 120_000);
  afterAll(async () => db?.drop());
  /** A partition's (or its index's) table (or index) it belongs to. */
  const parentOf = new Map<string, string>();
  const emptyPartitions = new Set<string>();

  const page = (filter: RunsPageQuery['filter'], after?: RunsPageQuery['after']): RunsPageQuery => ({
    filter,
    after,
    limit: 51,
    now,
  });

  /** The plan's nodes, depth first: each node's type and the index it reads, if any. */
  async function planOf(query: { text: string; values: unknown[] }): Promise<string[]> {
    return planNodes(await queryPlan(db.pool, query)).flatMap((node) => {
      const read = node['Index Name'] ?? node['Relation Name'];
      if (read !== undefined && emptyPartitions.has(read)) return [];
      return [`${node['Node Type']} ${read === undefined ? '' : (parentOf.get(read) ?? read)}`.trim()];
    });
  }

  const cursor = { dueAt: new Date('2026-03-10T00:00:00Z'), runId: 'run_0033000' };

  it.each([
    ['a team', { team: 'team-07' }, 'run_listing_team_idx'],
    ['a job', { team: 'team-07', job: 'job-507' }, 'run_listing_job_idx'],
    ['a queue', { team: 'team-07', queue: 'q-7' }, 'run_listing_queue_idx'],
    [
      'a team, finished runs, a due window',
      { team: 'team-07', state: 'succeeded', dueBefore: now },
      'run_listing_team_idx',
    ],
  ] as const)('reads a page of %s from one index, in its order, without a sort', async (_, filter, index) => {
    for (const after of [undefined, cursor]) {
      const plan = await planOf(runsPageSql(page(filter, after)));
      expect(plan[0]).toBe('Limit');
      expect(plan).toContainEqual(expect.stringMatching(new RegExp(`^Index (Only )?Scan ${index}$`)));
      expect(plan).toContain('Index Scan runs_pkey');
      // Each run's definition comes with its listing row: no second read of it.
      expect(plan).not.toContain('Index Scan run_listing_pkey');
      expect(plan.some((n) => n.startsWith('Sort') || n.startsWith('Seq Scan'))).toBe(false);
    }
  });

  it("reads a team's dead runs from runs_ended_team_idx, in its order, without a sort", async () => {
    for (const after of [undefined, cursor]) {
      const plan = await planOf(runsPageSql(page({ team: 'team-07', state: 'dead' }, after)));
      // The dead runs not discarded are live, the discarded ones in their days: every partition's part of the index, merged.
      expect(plan[0]).toBe('Limit');
      expect(plan).toContain('Merge Append');
      expect(plan.some((n) => n.startsWith('Sort'))).toBe(false);
      // Besides that index, only the definitions of the page's runs, each by its listing row's key.
      expect(new Set(plan.filter((n) => n.includes('Scan')))).toEqual(
        new Set(['Index Scan runs_ended_team_idx', 'Index Scan run_listing_pkey']),
      );
    }
  });

  it("reads a team's few cancelled runs in a range from runs_ended_team_idx, never by a scan of runs", async () => {
    // A few dozen rows: the planner may read them in the index's order, or fetch them by a bitmap of
    // the same index and sort them; either way only the team's cancelled runs in the range are read.
    const filter = { team: 'team-07', state: 'cancelled', dueAfter: new Date('2026-02-20T00:00:00Z') } as const;
    for (const after of [undefined, cursor]) {
      const plan = await planOf(runsPageSql(page(filter, after)));
      expect(plan).toContainEqual(expect.stringMatching(/^(Bitmap )?Index Scan runs_ended_team_idx$/));
      expect(plan.some((node) => node.startsWith('Seq Scan'))).toBe(false);
    }
  });

  it("reads a job's dead runs from runs_ended_job_idx", async () => {
    const plan = await planOf(runsPageSql(page({ team: 'team-07', job: 'job-507', state: 'dead' })));
    expect(plan.join(', ')).toMatch(/runs_ended_job_idx/);
    expect(plan.filter((n) => n.startsWith('Seq Scan'))).toEqual([]);
  });

  it.each([
    ["a team's leased", { team: 'team-07', state: 'leased' }, /run_leases/],
    ["a job's leased", { team: 'team-07', job: 'job-507', state: 'leased' }, /Index (Only )?Scan run_leases_pkey/],
    ["a team's ready", { team: 'team-07', state: 'ready' }, /ready_runs/],
    ["a job's scheduled", { team: 'team-07', job: 'job-507', state: 'scheduled' }, /Index Scan ready_runs_job_idx/],
  ] as const)(
    'reads %s runs from the work not done, sorting only those, each run by its key',
    async (_, filter, read) => {
      const plan = await planOf(runsPageSql(page(filter)));
      expect(plan.join(', ')).toMatch(read);
      expect(plan.filter((n) => /^Seq Scan (runs|run_listing)$/.test(n))).toEqual([]);
      const runsRead = plan.filter((n) => / runs(_\w+)?$/.test(n));
      expect(runsRead.length).toBeGreaterThan(0);
      for (const read of runsRead) expect(read).toBe('Index Scan runs_pkey');
      const rows = await listRuns(db.pool, page(filter));
      const { rows: expected } = await db.pool.query<{ run_id: string }>(
        `SELECT r.run_id FROM runs r WHERE r.team = $1 AND ($2::text IS NULL OR r.job = $2) AND ${
          filter.state === 'ready'
            ? "r.state IN ('scheduled', 'retry_wait') AND r.available_at <= $3"
            : filter.state === 'scheduled'
              ? "r.state = 'scheduled' AND r.available_at > $3"
              : "r.state = 'leased' AND $3::timestamptz IS NOT NULL"
        } ORDER BY r.due_at DESC, r.run_id DESC LIMIT 51`,
        [filter.team, 'job' in filter ? filter.job : null, now],
      );
      expect(rows.map((r) => r.run.definition.runId)).toEqual(expected.map((r) => r.run_id));
      expect(expected.length).toBeGreaterThan(0);
    },
  );

  it("merges a page of each team's for the admin's every run, and sorts only those", async () => {
    const plan = await planOf(runsPageSql(page({})));
    expect(plan).toContainEqual(expect.stringMatching(/^Index (Only )?Scan run_listing_team_idx$/));
    expect(plan.filter((n) => /^Seq Scan (runs|run_listing)$/.test(n))).toEqual([]);
    // The sort above the teams' pages takes at most teams × limit rows, not the runs.
    const sort = (await queryPlan(db.pool, runsPageSql(page({})), { analyze: true })).Plans?.[0];
    expect(sort?.['Node Type']).toBe('Sort');
    expect(sort!.Plans![0]!['Actual Rows']).toBeLessThanOrEqual(20 * 51);
  });

  it('pages through a job newest due first, each run once', async () => {
    const seen: string[] = [];
    let after: RunsPageQuery['after'];
    for (;;) {
      const rows = await listRuns(db.pool, { ...page({ job: 'job-507' }, after), limit: 37 });
      seen.push(...rows.map((r) => r.run.definition.runId));
      if (rows.length < 37) break;
      after = rows[rows.length - 1]!.key;
    }
    expect(seen).toHaveLength(200);
    expect(new Set(seen).size).toBe(200);
    const { rows } = await db.pool.query<{ run_id: string }>(
      "SELECT run_id FROM runs WHERE job = 'job-507' ORDER BY due_at DESC, run_id DESC",
    );
    expect(seen).toEqual(rows.map((r) => r.run_id));
  });

  it("lists a team's jobs and a queue's by index, and the admin's by the primary key", async () => {
    const explainJobs = async (team: string | undefined, queue: string | undefined): Promise<string> => {
      const { rows } = await db.pool.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT name FROM jobs j WHERE ${team === undefined ? 'true' : `j.team = '${team}'`}
           AND ${queue === undefined ? 'true' : `(j.definition->>'queue') = '${queue}'`} AND j.name > 'job-1'
           ORDER BY j.name LIMIT 51`,
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    };
    expect(await explainJobs('team-07', undefined)).toMatch(/Index (Only )?Scan using jobs_team_idx/);
    expect(await explainJobs(undefined, 'q-7')).toMatch(/Index Scan using jobs_queue_idx/);
    expect(await explainJobs(undefined, undefined)).toMatch(/Index (Only )?Scan using jobs_pkey/);
    const jobs = await listJobs(db.pool, { team: 'team-07' }, 'job-507', 3);
    const { rows } = await db.pool.query<{ name: string }>(
      "SELECT name FROM jobs WHERE team = 'team-07' AND name > 'job-507' ORDER BY name LIMIT 3",
    );
    expect(jobs.map((j) => j.definition.name)).toEqual(rows.map((r) => r.name));
  });

  it('counts the queues from the work not done and the partial index of dead runs, never the finished', async () => {
    const { rows } = await db.pool.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT count(*) FROM ready_runs WHERE team = 'team-07'
       UNION ALL SELECT count(*) FROM run_leases WHERE team = 'team-07'
       UNION ALL SELECT count(*) FROM runs WHERE ended = 'dead' AND NOT discarded AND team = 'team-07'`,
    );
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    // Each day's partition by its partial index of dead runs, never its rows (most of them finished); a
    // partition with no rows at all may be "scanned" (cost 0.00..0.00: nothing to read).
    expect(
      plan.split('\n').filter((line) => /Seq Scan on runs/.test(line) && !/cost=0\.00\.\.0\.00 /.test(line)),
    ).toEqual([]);
    expect(plan).toMatch(/Index (Only )?Scan using runs_d\d{8}_team_dead_at_run_id_idx/);
    const stats = await countQueueRuns(db.pool, 'team-07', now);
    const { rows: expected } = await db.pool.query<Record<'ready' | 'leased' | 'retry_wait' | 'dead', number>>(
      `SELECT count(*) FILTER (WHERE state IN ('scheduled', 'retry_wait') AND available_at <= $1)::int AS ready,
              count(*) FILTER (WHERE state = 'retry_wait' AND available_at > $1)::int AS retry_wait,
              count(*) FILTER (WHERE state = 'leased')::int AS leased,
              count(*) FILTER (WHERE state = 'dead')::int AS dead
         FROM runs WHERE team = 'team-07'`,
      [now],
    );
    for (const key of ['ready', 'leased', 'retry_wait', 'dead'] as const) {
      expect(stats.reduce((n, s) => n + s[key], 0)).toBe(expected[0]![key]);
      expect(expected[0]![key]).toBeGreaterThan(0);
    }
  });
});
