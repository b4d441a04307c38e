import { comparePositions, type FindEventsOptions, type RecordedEvent } from './event-store.port';

/**
 * Whether `event` passes a findEvents filter, for the stores that filter in the process (the in-memory
 * one, and KurrentDB beyond the stream prefix its server filters by).
 */
export function matchesFind(event: RecordedEvent, options: FindEventsOptions): boolean {
  const at = event.recordedAt.getTime();
  return (
    (options.streamPrefix === undefined || event.streamId.startsWith(options.streamPrefix)) &&
    (options.streamId === undefined || event.streamId === options.streamId) &&
    (options.type === undefined || event.type === options.type) &&
    (options.team === undefined || event.metadata['team'] === options.team) &&
    (options.actor === undefined || event.metadata['actor'] === options.actor) &&
    (options.since === undefined || at >= options.since.getTime()) &&
    (options.until === undefined || at < options.until.getTime()) &&
    (options.before === undefined || comparePositions(event.position, options.before) < 0)
  );
}
