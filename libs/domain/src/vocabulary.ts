/**
 * The names a client shows, as the API has them: run states, priorities, event types and the shapes
 * of run events' data. Modules without dependencies only, so the dashboard's browser bundle takes
 * them without the schedule code (apps/dashboard imports this file as `@chronicle/domain/vocabulary`).
 */
export { RunState, RUN_STATES } from './run/run-states';
export { Priority, PRIORITIES } from './run/run-events';
export type {
  RunScheduledData,
  RunLeasedData,
  RunFailedData,
  LeaseExpiredData,
  RunDeadData,
  RunCancelledData,
  RunReplayedData,
} from './run/run-events';
export { RunEventType, JobEventType, type EventMetadata } from './streams';
