import {
  DEFAULT_OVERLAP_POLICY,
  isRunStream,
  runStreamId,
  STORED_RUN_STATES,
  UNSUCCESSFUL_RUN_STATES,
} from '@chronicle/domain';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';

/** The quoted states of a CHECK constraint or an index predicate, as PostgreSQL prints it back. */
const statesIn = (sql: string): string[] => [...sql.matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1]!).sort();
const sorted = (states: readonly string[]): string[] => [...states].sort();

/**
 * Where SQL must mirror the domain (a rule written once in TypeScript and
 * repeated in a migration: docs/architecture.md, "Where things are"), the
 * migrated database is checked against it: a state added to RUN_STATES, or a
 * changed default, fails here until the migrations follow.
 */
describe('the SQL agrees with the domain', () => {
  let db: TestDatabase;
  beforeAll(async () => (db = await createTestDatabase()));
  afterAll(() => db?.drop());

  const indexPredicate = async (index: string): Promise<string> =>
    (
      await db.pool.query<{ predicate: string }>(
        'SELECT pg_get_expr(i.indpred, i.indrelid) AS predicate FROM pg_index i WHERE i.indexrelid = $1::regclass',
        [index],
      )
    ).rows[0]!.predicate;

  const checkOfRuns = async (constraint: string): Promise<string> =>
    (
      await db.pool.query<{ def: string }>(
        "SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'runs'::regclass AND conname = $1",
        [constraint],
      )
    ).rows[0]!.def;

  it('runs.state holds exactly the stored run states', async () => {
    expect(statesIn(await checkOfRuns('runs_state_check'))).toEqual(sorted(STORED_RUN_STATES));
  });

  it('runs.ended, which the indexes of ended runs are partial on, is the state of the unsuccessful runs', async () => {
    expect(statesIn(await checkOfRuns('runs_ended_check'))).toEqual(sorted(UNSUCCESSFUL_RUN_STATES));
    expect(await indexPredicate('runs_ended_team_idx')).toBe('(ended IS NOT NULL)');
    expect(await indexPredicate('runs_ended_job_idx')).toBe('(ended IS NOT NULL)');
  });

  it('no index of runs reads the state, so that a transition updates the row in place', async () => {
    const { rows } = await db.pool.query<{ index: string }>(
      `SELECT i.indexrelid::regclass::text AS index FROM pg_index i
        WHERE i.indrelid = 'runs'::regclass
          AND (pg_get_indexdef(i.indexrelid) ~ '\\mstate\\M' OR coalesce(pg_get_expr(i.indpred, i.indrelid), '') ~ '\\mstate\\M')`,
    );
    expect(rows).toEqual([]);
  });

  it('a run is locked by the key es_append takes for its stream', async () => {
    const { rows } = await db.pool.query<{ same: boolean; appendUsesIt: boolean }>(
      `SELECT run_stream_id($1) = $2 AND run_lock_key($1) = stream_lock_key($2) AND stream_lock_key($2) = hashtextextended($2, 0) AS same,
              position('stream_lock_key(u.s)' IN pg_get_functiondef('es_append(text[], bytea[], bigint[], uuid[], json)'::regprocedure)) > 0 AS "appendUsesIt"`,
      ['run_x1', runStreamId('run_x1')],
    );
    expect(rows[0]).toEqual({ same: true, appendUsesIt: true });
  });

  it("the log's streams that end (es_stream_ends, laid out by week) are the runs' and no others", async () => {
    const streams = [runStreamId('run_x1'), 'job-ops.nightly', 'team-ops', 'platform'];
    const { rows } = await db.pool.query<{ ends: boolean }>(
      'SELECT es_stream_ends(s) AS ends FROM unnest($1::text[]) WITH ORDINALITY AS u(s, i) ORDER BY i',
      [streams],
    );
    expect(rows.map((r) => r.ends)).toEqual(streams.map(isRunStream));
    expect(rows.map((r) => r.ends)).toEqual([true, false, false, false]);
  });

  it('a schedule without an overlap policy gets the domain default', async () => {
    const { rows } = await db.pool.query<{ policy: string }>(
      `SELECT job_overlap_policy('{"schedule": {"cron": "* * * * *"}}') AS policy`,
    );
    expect(rows[0]!.policy).toBe(DEFAULT_OVERLAP_POLICY);
  });
});
