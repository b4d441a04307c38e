import { randomUUID } from 'node:crypto';
import { InvalidAppendError } from './event-store.errors';
import type { EventToAppend, StreamAppend } from './event-store.port';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface PreparedEvent {
  readonly id: string;
  readonly type: string;
  readonly data: unknown;
  readonly metadata: Readonly<Record<string, unknown>>;
}

export interface PreparedAppend {
  readonly streamId: string;
  readonly expected: StreamAppend['expected'];
  readonly events: readonly PreparedEvent[];
}

/** The checks every adapter makes before writing, and an id for each event without one. */
export function prepareAppends(appends: readonly StreamAppend[]): PreparedAppend[] {
  if (appends.length === 0) throw new InvalidAppendError('nothing to append');
  const seen = new Set<string>();
  return appends.map(({ streamId, expected, events }) => {
    if (typeof streamId !== 'string' || streamId === '') throw new InvalidAppendError('stream id must be a non-empty string');
    if (seen.has(streamId)) throw new InvalidAppendError(`stream ${streamId} appears twice in one append`);
    seen.add(streamId);
    if (typeof expected === 'bigint' && expected < 0n) throw new InvalidAppendError(`expected revision ${expected} is negative`);
    if (events.length === 0) throw new InvalidAppendError(`no events for stream ${streamId}`);
    return { streamId, expected, events: events.map(prepareEvent) };
  });
}

function prepareEvent(event: EventToAppend): PreparedEvent {
  if (event.id !== undefined && !UUID.test(event.id)) throw new InvalidAppendError(`event id ${event.id} is not a UUID`);
  if (typeof event.type !== 'string' || event.type === '') throw new InvalidAppendError('event type must be a non-empty string');
  if (event.data === undefined) throw new InvalidAppendError(`event ${event.type} has no data`);
  return { id: (event.id ?? randomUUID()).toLowerCase(), type: event.type, data: event.data, metadata: event.metadata ?? {} };
}
