import type { DebouncePolicy } from '../job/job-decider';
import type { PresentRun } from './run-snapshot';

/**
 * Whether an enqueue naming the run's debounce key moves it instead of making another run: while it waits
 * for its first lease (scheduled, never leased). A run that was leased has started on its payload, and a
 * replayed dead run is its old payload's: a new enqueue makes a new run.
 */
export function takesDebounce(run: Pick<PresentRun, 'status' | 'attempt'>): boolean {
  return run.status === 'scheduled' && run.attempt === 0;
}

/** When a debounced enqueue's run becomes ready: the job's debounce seconds after `from`, the enqueue's time. */
export function debouncedAt(policy: DebouncePolicy, from: Date): Date {
  return new Date(from.getTime() + policy.seconds * 1000);
}

/**
 * The debounce key a run's row keeps (runs.debounce_key, migrations/0043): the run's key while it takes
 * a debounce, null otherwise, so the index by key holds only the runs an enqueue may move. A function of
 * the run's state alone, so that a rebuild from the log writes the same.
 */
export function debounceKeyKept(run: PresentRun): string | null {
  const key = run.definition.debounceKey;
  return key !== undefined && takesDebounce(run) ? key : null;
}
