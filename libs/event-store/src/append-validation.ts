import { randomFillSync } from 'node:crypto';
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
  const ids = new Set<string>();
  return appends.map(({ streamId, expected, events }) => {
    if (typeof streamId !== 'string' || streamId === '')
      throw new InvalidAppendError('stream id must be a non-empty string');
    if (streamId.includes('\0')) throw new InvalidAppendError('stream id must not hold a NUL character');
    if (seen.has(streamId)) throw new InvalidAppendError(`stream ${streamId} appears twice in one append`);
    seen.add(streamId);
    if (typeof expected === 'bigint' && expected < 0n)
      throw new InvalidAppendError(`expected revision ${expected} is negative`);
    if (events.length === 0) throw new InvalidAppendError(`no events for stream ${streamId}`);
    const prepared = events.map(prepareEvent);
    for (const { id } of prepared) {
      if (ids.has(id)) throw new InvalidAppendError(`event id ${id} appears twice in one append`);
      ids.add(id);
    }
    return { streamId, expected, events: prepared };
  });
}

function prepareEvent(event: EventToAppend): PreparedEvent {
  if (event.id !== undefined && !UUID.test(event.id))
    throw new InvalidAppendError(`event id ${event.id} is not a UUID`);
  if (typeof event.type !== 'string' || event.type === '')
    throw new InvalidAppendError('event type must be a non-empty string');
  if (event.data === undefined) throw new InvalidAppendError(`event ${event.type} has no data`);
  return {
    id: (event.id ?? uuidV7()).toLowerCase(),
    type: event.type,
    data: event.data,
    metadata: event.metadata ?? {},
  };
}

/**
 * RFC 9562 version 7: time-ordered, so new ids land at the right edge of any
 * index on them instead of on random pages. Random bits come from a pool
 * refilled 256 ids at a time: one system call per pool, not per event.
 */
export function uuidV7(nowMs: number = Date.now()): string {
  if (poolOffset + 16 > randomPool.length) {
    randomFillSync(randomPool);
    poolOffset = 0;
  }
  const bytes = Buffer.from(randomPool.subarray(poolOffset, poolOffset + 16));
  poolOffset += 16;
  bytes.writeUIntBE(nowMs, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const randomPool = Buffer.alloc(16 * 256);
let poolOffset = randomPool.length;
