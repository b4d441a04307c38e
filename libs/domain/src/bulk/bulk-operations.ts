import { DomainError } from '../domain-error';
import type { JobDefinition } from '../job/job-decider';
import type { PresentRun } from '../run/run-snapshot';
import { isWaiting } from '../run/run-states';
import { BULK_ACTIONS, type BulkAction, type BulkStatus, type CancellableState } from './bulk-vocabulary';

/*
 * Bulk operations (docs/api.md, "Bulk operations"): which runs or jobs a filter selects, checked again on
 * each locked run or job before the decider acts on it, and what stop and resume do to an operation. Pure:
 * the commands (libs/commands/src/bulk) find, lock and append.
 */

/** Runs or jobs a batch takes at once: one unit of work, then the operation's row is saved. */
export const BULK_BATCH = 100;
/** The dry run's sample: this many of the first matches. */
export const BULK_SAMPLE = 10;
/** An operation whose process has not saved it for this long is taken over by another process. */
export const BULK_STALE_SECONDS = 30;

/** `bulk_` and 32 hex digits: the creation time first, so that ids sort by age. */
export const BULK_OPERATION_ID_PATTERN = /^bulk_[0-9a-f]{32}$/;

/** What a bulk operation takes: each field given narrows it (times are ISO 8601 instants). */
export interface BulkFilter {
  /** The admin's choice of one team; a team token acts on its own team only. */
  readonly team?: string;
  readonly job?: string;
  readonly queue?: string;
  /** cancel-runs: only runs in this state (default: every waiting one). */
  readonly state?: CancellableState;
  /** The last error contains this text, in any case. */
  readonly error?: string;
  /** cancel-runs: due at or after, due before. */
  readonly dueAfter?: string;
  readonly dueBefore?: string;
  /** replay-dead, discard-dead: dead at or after, dead before. */
  readonly deadAfter?: string;
  readonly deadBefore?: string;
}

type FilterField = keyof BulkFilter;

/** The fields each action's filter may hold; another is refused, naming it. */
const FIELDS: Readonly<Record<BulkAction, readonly FilterField[]>> = {
  'cancel-runs': ['team', 'job', 'queue', 'state', 'error', 'dueAfter', 'dueBefore'],
  'pause-jobs': ['team', 'job', 'queue'],
  'resume-jobs': ['team', 'job', 'queue'],
  'replay-dead': ['team', 'job', 'queue', 'error', 'deadAfter', 'deadBefore'],
  'discard-dead': ['team', 'job', 'queue', 'error', 'deadAfter', 'deadBefore'],
};

export function bulkFilterFields(action: BulkAction): readonly FilterField[] {
  return FIELDS[action];
}

/** Whether an action acts on runs (on their servers) or on jobs (in the control database). */
export function actsOnRuns(action: BulkAction): boolean {
  switch (action) {
    case 'cancel-runs':
    case 'replay-dead':
    case 'discard-dead':
      return true;
    case 'pause-jobs':
    case 'resume-jobs':
      return false;
    default: {
      const unknown: never = action;
      throw new Error(`unknown bulk action ${String(unknown)}`);
    }
  }
}

/** An action's filter as given, refused (validation-error naming the field) where a field does not apply. */
export function checkBulkFilter(action: BulkAction, filter: BulkFilter): BulkFilter {
  if (!(BULK_ACTIONS as readonly string[]).includes(action))
    throw new DomainError('validation-error', `action must be one of ${BULK_ACTIONS.join(', ')}`, { field: 'action' });
  const allowed = FIELDS[action];
  for (const [field, value] of Object.entries(filter) as Array<[FilterField, unknown]>) {
    if (value === undefined) continue;
    if (!allowed.includes(field))
      throw new DomainError(
        'validation-error',
        `filter.${field} does not apply to ${action}; its filter takes ${allowed.join(', ')}`,
        { field: `filter.${field}` },
      );
  }
  for (const [after, before] of [
    ['dueAfter', 'dueBefore'],
    ['deadAfter', 'deadBefore'],
  ] as const) {
    const from = filter[after];
    const to = filter[before];
    if (from !== undefined && to !== undefined && Date.parse(from) >= Date.parse(to))
      throw new DomainError('validation-error', `filter.${after} must be before filter.${before}`, {
        field: `filter.${after}`,
      });
  }
  return filter;
}

/**
 * A run of the operation's snapshot, read again under its lock: is it still one the filter selects? A run
 * that changed meanwhile (leased, cancelled, replayed by someone else, or dead again after the snapshot) is
 * skipped, never forced. `team` is the team acted on (null: the admin's operation over every team).
 * `ready` and `scheduled` are one stored state: time passing does not take a run out of the selection.
 */
export function runStillSelected(
  action: BulkAction,
  team: string | null,
  filter: BulkFilter,
  snapshotAt: Date,
  run: PresentRun,
): boolean {
  const { definition } = run;
  if (team !== null && definition.team !== team) return false;
  if (filter.job !== undefined && definition.job !== filter.job) return false;
  if (filter.queue !== undefined && definition.queue !== filter.queue) return false;
  switch (action) {
    case 'cancel-runs': {
      if (!isWaiting(run.status)) return false;
      if (filter.state !== undefined && run.status !== (filter.state === 'retry_wait' ? 'retry_wait' : 'scheduled'))
        return false;
      const due = Date.parse(definition.dueAt);
      return (
        errorContains(run.lastError, filter.error) &&
        (filter.dueAfter === undefined || due >= Date.parse(filter.dueAfter)) &&
        (filter.dueBefore === undefined || due < Date.parse(filter.dueBefore))
      );
    }
    case 'replay-dead':
    case 'discard-dead': {
      if (run.status !== 'dead' || run.discarded || run.death === null) return false;
      const deadAt = Date.parse(run.death.deadAt);
      return (
        deadAt < snapshotAt.getTime() &&
        errorContains(run.death.lastError ?? null, filter.error) &&
        (filter.deadAfter === undefined || deadAt >= Date.parse(filter.deadAfter)) &&
        (filter.deadBefore === undefined || deadAt < Date.parse(filter.deadBefore))
      );
    }
    case 'pause-jobs':
    case 'resume-jobs':
      return false;
    default: {
      const unknown: never = action;
      throw new Error(`unknown bulk action ${String(unknown)}`);
    }
  }
}

/** A job of the operation's snapshot, read again: still the team's, and of the filter's queue. */
export function jobStillSelected(team: string | null, filter: BulkFilter, definition: JobDefinition): boolean {
  return (
    (team === null || definition.team === team) &&
    (filter.job === undefined || definition.name === filter.job) &&
    (filter.queue === undefined || definition.queue === filter.queue)
  );
}

function errorContains(lastError: string | null, text: string | undefined): boolean {
  return text === undefined || (lastError ?? '').toLowerCase().includes(text.toLowerCase());
}

/** :stop of an operation in `status`: its next status, or null when it is stopped already. */
export function decideStop(status: BulkStatus): 'stopping' | null {
  switch (status) {
    case 'running':
    case 'stopping':
      return 'stopping';
    case 'stopped':
      return null;
    case 'done':
    case 'failed':
      throw new DomainError('invalid-transition', `a ${status} operation cannot be stopped`);
    default: {
      const unknown: never = status;
      throw new Error(`unknown bulk status ${String(unknown)}`);
    }
  }
}

/** :resume of an operation in `status`: running again from its cursor, or null when it runs already. */
export function decideResume(status: BulkStatus): 'running' | null {
  switch (status) {
    case 'stopping':
    case 'stopped':
    case 'failed':
      return 'running';
    case 'running':
      return null;
    case 'done':
      throw new DomainError('invalid-transition', 'a done operation cannot be resumed');
    default: {
      const unknown: never = status;
      throw new Error(`unknown bulk status ${String(unknown)}`);
    }
  }
}
