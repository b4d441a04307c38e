import type { Queryable } from '@chronicle/platform';
import type { DefinedJob, JobSnapshot } from '@chronicle/domain';

/** Upsert from the decider's state; an older revision never overwrites a newer row. */
export async function upsertJob(db: Queryable, state: JobSnapshot): Promise<void> {
  if (state.status === 'absent') return;
  await upsertJobs(db, [state]);
}

/**
 * Many jobs in one statement. A row that changed also tells the
 * materialiser's due index (migrations/0005): a scheduled, running job is
 * looked at on the next pass ('-infinity'), one without a schedule or paused
 * is not looked at (NULL). Resuming thus applies the missed-run policy from
 * the job's old cursor.
 */
export async function upsertJobs(db: Queryable, states: readonly DefinedJob[]): Promise<void> {
  if (states.length === 0) return;
  await db.query(
    `WITH job AS (
       INSERT INTO jobs AS j (name, team, definition, version, paused, revision, updated_at)
       SELECT x.name, x.team, x.definition, x.version, x.paused, x.revision, now()
         FROM jsonb_to_recordset($1::jsonb) AS x(name text, team text, definition jsonb, version int, paused boolean, revision bigint)
       ON CONFLICT (name) DO UPDATE
          SET team = EXCLUDED.team, definition = EXCLUDED.definition, version = EXCLUDED.version,
              paused = EXCLUDED.paused, revision = EXCLUDED.revision, updated_at = now()
        WHERE j.revision < EXCLUDED.revision
       RETURNING j.name, j.paused, j.definition
     )
     INSERT INTO schedule_cursors AS c (job, materialised_through, next_fire_at)
     SELECT name, NULL, CASE WHEN jsonb_typeof(definition->'schedule') = 'object' AND NOT paused THEN '-infinity'::timestamptz END FROM job
     ON CONFLICT (job) DO UPDATE SET next_fire_at = EXCLUDED.next_fire_at, updated_at = now()`,
    [
      JSON.stringify(
        states.map((s) => ({
          name: s.definition.name,
          team: s.definition.team,
          definition: s.definition,
          version: s.version,
          paused: s.paused,
          revision: s.revision,
        })),
      ),
    ],
  );
}
