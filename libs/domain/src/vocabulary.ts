/**
 * The names a client shows, as the API has them: run states, priorities and event types. Modules
 * without dependencies only, so the dashboard's browser bundle takes them without the schedule code
 * (apps/dashboard imports this file as `@chronicle/domain/vocabulary`).
 */
export { RunState, RUN_STATES } from './run/run-states';
export { Priority, PRIORITIES } from './run/run-events';
export { RunEventType } from './streams';
export { BULK_ACTIONS, BULK_STATUSES, CANCELLABLE_STATES } from './bulk/bulk-vocabulary';
