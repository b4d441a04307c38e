import { holdsKey, type PresentRun, type RunScheduledData } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { findRunSnapshots } from '@chronicle/projections';

/** A job's unique key: the job, then the key. */
type JobKey = readonly [job: string, key: string];

/**
 * Serialises, per (job, unique key), the enqueues that name the key: taken in key order (two batches
 * cannot deadlock) and advisory, so es_append may still come after it. Held until the enqueue's rows are
 * written (the unit of work's transaction), so the next enqueue of the key reads the run this one made.
 */
async function lockUniqueKeys(db: Queryable, keys: readonly JobKey[]): Promise<void> {
  await db.query({
    name: 'lock_unique_keys',
    text: `SELECT pg_advisory_xact_lock(hashtextextended('unique-run-' || k.job || '/' || k.key, 0))
             FROM unnest($1::text[], $2::text[]) AS k(job, key) ORDER BY k.job COLLATE "C", k.key COLLATE "C"`,
    values: [keys.map(([job]) => job), keys.map(([, key]) => key)],
  });
}

/**
 * The runs that may hold these keys (runs_unique_idx, migrations/0038): those whose rows keep the key
 * (keptByState), but for runs whose time (scope `for`) has run out; holdsKey decides by each one's rule.
 */
async function findKeyHolders(db: Queryable, keys: readonly JobKey[]): Promise<PresentRun[]> {
  const { rows } = await db.query<{ run_id: string }>({
    name: 'find_unique_key_holders',
    text: `SELECT r.run_id FROM unnest($1::text[], $2::text[]) AS k(job, key)
             JOIN runs r ON r.job = k.job AND r.unique_key = k.key
            WHERE r.unique_key IS NOT NULL AND (r.unique_until IS NULL OR r.unique_until > now())`,
    values: [keys.map(([job]) => job), keys.map(([, key]) => key)],
  });
  return rows.length === 0
    ? []
    : findRunSnapshots(
        db,
        rows.map((r) => r.run_id),
      );
}

/**
 * New runs sorted by their unique keys: those to make, and for each of the others the run that holds its
 * key (a run of the job that holds it by its rule at `now`, or an earlier run of the same batch). Locks the
 * keys first (lockUniqueKeys): call it in the unit of work that appends the runs, before the append.
 */
export async function keepUniqueRuns(
  db: Queryable,
  runs: readonly RunScheduledData[],
  now: Date,
): Promise<{ make: RunScheduledData[]; held: Map<string, { holder: string; run?: PresentRun }> }> {
  const held = new Map<string, { holder: string; run?: PresentRun }>();
  const keyed = runs.filter((run) => run.unique !== undefined);
  if (keyed.length === 0) return { make: [...runs], held };
  const id = (job: string, key: string): string => `${job}\u0000${key}`;
  const keys = [
    ...new Map(keyed.map((run) => [id(run.job, run.unique!.key), [run.job, run.unique!.key] as const])).values(),
  ];
  await lockUniqueKeys(db, keys);
  const holders = new Map<string, PresentRun>();
  for (const run of await findKeyHolders(db, keys)) {
    const { job, unique } = run.definition;
    if (unique !== undefined && holdsKey(unique, run.status, now)) holders.set(id(job, unique.key), run);
  }
  const taken = new Map<string, string>(); // a key's run made by this batch
  const make: RunScheduledData[] = [];
  for (const run of runs) {
    if (run.unique === undefined) {
      make.push(run);
      continue;
    }
    const key = id(run.job, run.unique.key);
    const holder = holders.get(key);
    const earlier = taken.get(key);
    if (holder !== undefined) held.set(run.runId, { holder: holder.definition.runId, run: holder });
    else if (earlier !== undefined) held.set(run.runId, { holder: earlier });
    else {
      taken.set(key, run.runId);
      make.push(run);
    }
  }
  return { make, held };
}
