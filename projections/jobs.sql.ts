import type { Queryable } from '../libs/platform/src/database/pg-pool';
import type { JobSnapshot } from '../libs/domain/src/job/job-decider';

/** Upsert from the decider's state; an older revision never overwrites a newer row. */
export async function upsertJob(db: Queryable, state: JobSnapshot): Promise<void> {
  if (state.status === 'absent') return;
  await db.query(
    `INSERT INTO jobs AS j (name, team, definition, version, paused, revision, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, now())
     ON CONFLICT (name) DO UPDATE
        SET team = EXCLUDED.team, definition = EXCLUDED.definition, version = EXCLUDED.version,
            paused = EXCLUDED.paused, revision = EXCLUDED.revision, updated_at = now()
      WHERE j.revision < EXCLUDED.revision`,
    [state.definition.name, state.definition.team, JSON.stringify(state.definition), state.version, state.paused, state.revision],
  );
}
