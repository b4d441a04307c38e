/** The public surface of this package: what the other packages of the repository import from it. */
export { uuidV7 } from './append-validation';
export { createEventStore } from './create-event-store';
export { EventStoreError, EventStoreUnsupportedError, WrongExpectedRevisionError } from './event-store.errors';
export {
  type AppendResult,
  type EventStore,
  type EventToAppend,
  type ExpiryReport,
  type LogPosition,
  type ReadModelWrite,
  type RecordedEvent,
  START,
  type StreamAppend,
  type UnitOfWork,
  type UnitOfWorkOptions,
  comparePositions,
} from './event-store.port';
export { InMemoryEventStore } from './in-memory/in-memory.event-store';
export { PostgresEventStore } from './postgres/postgres.event-store';
export {
  CONTROL_SERVER,
  type ControlDatabase,
  RunServerDirectory,
  type RunServerConnection,
  SHARD_MAP_REFRESH_MS,
} from './run-servers';
