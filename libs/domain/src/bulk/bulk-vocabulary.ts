/**
 * The words of bulk operations (docs/api.md, "Bulk operations"), without dependencies: the dashboard's
 * bundle takes them through vocabulary.ts. migrations/0048 mirrors both lists in CHECK constraints.
 */

/** What a bulk operation does to each run or job its filter selects. */
export const BULK_ACTIONS = ['cancel-runs', 'pause-jobs', 'resume-jobs', 'replay-dead', 'discard-dead'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/**
 * Where an operation is: running (a process works through it, or will pick it up), stopping (asked to
 * stop: it does after the batch under way), stopped (resumable from its cursor), done, failed (an error
 * that asking again would not cure; resumable too).
 */
export const BULK_STATUSES = ['running', 'stopping', 'stopped', 'done', 'failed'] as const;
export type BulkStatus = (typeof BULK_STATUSES)[number];

/** The run states a cancel takes: a waiting run's (`ready` is a scheduled or retry_wait run whose time has come). */
export const CANCELLABLE_STATES = ['scheduled', 'ready', 'retry_wait'] as const;
export type CancellableState = (typeof CANCELLABLE_STATES)[number];
