import { decide, takesDebounce, type PresentRun, type RunEvent, type RunScheduledData } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { lockAndLoadRuns } from '../workers/complete-runs.sql';

/** A job's debounce key: the job, then the key. */
type JobKey = readonly [job: string, key: string];

/**
 * Serialises, per (job, debounce key), the enqueues that name the key: taken in key order (two batches
 * cannot deadlock) and advisory, so es_append may still come after it. Held until the enqueue's rows are
 * written (the unit of work's transaction), so the next enqueue of the key finds the run this one made or
 * moved, and two enqueues never both find none and make two.
 */
async function lockDebounceKeys(db: Queryable, keys: readonly JobKey[]): Promise<void> {
  await db.query({
    name: 'lock_debounce_keys',
    text: `SELECT pg_advisory_xact_lock(hashtextextended('debounce-run-' || k.job || '/' || k.key, 0))
             FROM unnest($1::text[], $2::text[]) AS k(job, key) ORDER BY k.job COLLATE "C", k.key COLLATE "C"`,
    values: [keys.map(([job]) => job), keys.map(([, key]) => key)],
  });
}

/**
 * The ids of the runs whose rows keep these keys (runs_debounce_idx, migrations/0043): a row keeps its key
 * only while its run may be moved (debounceKeyKept), so this is one probe per key, not a scan of its runs.
 */
async function findDebounceKeyRuns(db: Queryable, keys: readonly JobKey[]): Promise<string[]> {
  const { rows } = await db.query<{ run_id: string }>({
    name: 'find_debounce_key_runs',
    text: `SELECT r.run_id FROM unnest($1::text[], $2::text[]) AS k(job, key)
             JOIN runs r ON r.job = k.job AND r.debounce_key = k.key
            WHERE r.debounce_key IS NOT NULL`,
    values: [keys.map(([job]) => job), keys.map(([, key]) => key)],
  });
  return rows.map((r) => r.run_id);
}

/** The runs an enqueue makes, and those it moves instead: each waiting run of a key with its RunDebounced. */
export interface DebouncedRuns {
  readonly make: RunScheduledData[];
  /** By the id the enqueue's run would have had: the waiting run of its key, which it moves. */
  readonly moved: Map<string, PresentRun>;
  /** The moved runs (their locks held), and for each, its RunDebounced from the enqueue's run. */
  readonly runs: PresentRun[];
  readonly decideOne: (run: PresentRun) => RunEvent[];
}

/**
 * New runs sorted by their debounce keys: those to make, and those that move the waiting run of their key
 * instead (a run of the job with the key, scheduled and never leased), to the new run's due time and with
 * its payload. Locks the keys (lockDebounceKeys), then the waiting runs' streams (lockAndLoadRuns, as a
 * claim takes them: a run being leased is found leased, and the enqueue makes a new run): call it in the
 * unit of work that appends, before the append. A batch names each key once (checked by the caller).
 */
export async function keepDebouncedRuns(
  db: Queryable,
  runs: readonly RunScheduledData[],
  now: Date,
): Promise<DebouncedRuns> {
  const keyed = runs.filter((run) => run.debounceKey !== undefined);
  const moved = new Map<string, PresentRun>();
  const none = { make: [...runs], moved, runs: [], decideOne: () => [] };
  if (keyed.length === 0) return none;
  const id = (job: string, key: string): string => `${job}\u0000${key}`;
  await lockDebounceKeys(
    db,
    keyed.map((run) => [run.job, run.debounceKey!] as const),
  );
  const found = await findDebounceKeyRuns(
    db,
    keyed.map((run) => [run.job, run.debounceKey!] as const),
  );
  if (found.length === 0) return none;
  const waiting = new Map<string, PresentRun>();
  for (const run of (await lockAndLoadRuns(db, found)).runs) {
    const { job, debounceKey } = run.definition;
    // Read again under its stream's lock: a claim may have leased it since the probe.
    if (debounceKey !== undefined && takesDebounce(run)) waiting.set(id(job, debounceKey), run);
  }
  const make: RunScheduledData[] = [];
  const replacement = new Map<string, RunScheduledData>(); // by the moved run's id
  for (const run of runs) {
    const target = run.debounceKey === undefined ? undefined : waiting.get(id(run.job, run.debounceKey));
    if (target === undefined) make.push(run);
    else {
      moved.set(run.runId, target);
      replacement.set(target.definition.runId, run);
    }
  }
  return {
    make,
    moved,
    runs: [...moved.values()],
    decideOne: (run) => {
      const by = replacement.get(run.definition.runId)!;
      return decide(
        {
          type: 'DebounceRun',
          now,
          availableAt: new Date(by.dueAt),
          payload: by.payload,
          ...(by.payloadRef === undefined ? {} : { payloadRef: by.payloadRef }),
        },
        run,
      );
    },
  };
}
