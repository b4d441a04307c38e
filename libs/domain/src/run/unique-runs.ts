import type { UniquePolicy } from '../job/job-decider';
import type { RunUnique } from './run-events';
import { PENDING_RUN_STATES, type RunState, WAITING_RUN_STATES } from './run-states';

/** A unique key: what a client names its runs by (a customer id, an order number), up to 200 visible ASCII characters. */
export const UNIQUE_KEY_PATTERN = /^[\x21-\x7e]{1,200}$/;
export const UNIQUE_KEY_RULE = '1-200 visible ASCII characters';

/**
 * What a new run enqueued with `key` records (RunScheduledData.unique): the job's rule (while-pending when
 * the job names none) and, for scope `for`, until when it holds the key, counted from `now`.
 */
export function runUnique(key: string, policy: UniquePolicy | undefined, now: Date): RunUnique {
  if (policy?.scope === 'for')
    return { key, scope: 'for', until: new Date(now.getTime() + policy.seconds * 1000).toISOString() };
  return { key, scope: policy?.scope ?? 'while-pending' };
}

/**
 * Whether a run of the job that recorded `unique` still holds its key at `now`, in `state`: by the rule it
 * was enqueued under, so that a change of the job's rule applies to runs enqueued after it.
 */
export function holdsKey(unique: RunUnique, state: RunState, now: Date): boolean {
  if (unique.scope === 'for') return unique.until !== undefined && Date.parse(unique.until) > now.getTime();
  return keptByState(unique, state);
}

/**
 * Whether a run in `state` may still hold its key, time apart: by its state under a rule of states, always
 * under a rule of a time (until its time, which holdsKey reads). A run's row keeps its key while this holds
 * (runs.unique_key), so that only those runs are found by it; a function of the run's state alone, so that
 * a rebuild from the log writes the same.
 */
export function keptByState(unique: RunUnique, state: RunState): boolean {
  switch (unique.scope) {
    case 'while-pending':
      return (WAITING_RUN_STATES as readonly RunState[]).includes(state) || state === 'ready';
    case 'while-not-finished':
      return (PENDING_RUN_STATES as readonly RunState[]).includes(state) || state === 'ready';
    case 'for':
      return true;
  }
}
