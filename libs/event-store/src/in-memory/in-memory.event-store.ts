import type { Pool } from 'pg';
import { prepareAppends } from '../append-validation';
import { InvalidAppendError, WrongExpectedRevisionError } from '../event-store.errors';
import {
  START,
  comparePositions,
  type AppendResult,
  type EventStore,
  type EventToAppend,
  type ExpectedRevision,
  type LogPosition,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type UnitOfWork,
  type UnitOfWorkOptions,
  type EventRef,
  EXPIRY_BATCH,
  type ExpireStreamsRequest,
  type ExpiryReport,
  type FindEventsOptions,
} from '../event-store.port';
import { matchesFind } from '../event-filter';
import { separateUnitOfWork } from '../separate-unit-of-work';
import { WakeSignal } from '@chronicle/platform';
import { pollAll } from '../subscription-loop';

/** For fast unit tests of handlers only; the server never uses it. */
export class InMemoryEventStore implements EventStore {
  readonly kind = 'in-memory';
  private readonly log: RecordedEvent[] = [];
  private readonly streams = new Map<string, RecordedEvent[]>();
  private readonly byId = new Map<string, RecordedEvent>();
  private readonly appended = new WakeSignal();
  /** Events ever appended: positions go on from it, whatever expiry removed. */
  private written = 0n;

  constructor(private readonly now: () => Date = () => new Date()) {}

  async appendToStream(
    streamId: string,
    expected: ExpectedRevision,
    events: readonly EventToAppend[],
  ): Promise<AppendResult> {
    const [result] = await this.appendToStreams([{ streamId, expected, events }]);
    return result!;
  }

  unitOfWork<T>(readModels: Pool, work: (uow: UnitOfWork) => Promise<T>, options?: UnitOfWorkOptions): Promise<T> {
    return separateUnitOfWork(this, readModels, work, options);
  }

  async appendToStreams(appends: readonly StreamAppend[]): Promise<readonly AppendResult[]> {
    const prepared = prepareAppends(appends);
    const ids = prepared.flatMap((a) => a.events.map((e) => ({ streamId: a.streamId, id: e.id })));
    const existing = ids.filter(({ id }) => this.byId.has(id));
    if (existing.length > 0) {
      if (
        existing.length === ids.length &&
        existing.every(({ streamId, id }) => this.byId.get(id)?.streamId === streamId)
      ) {
        return prepared.map(({ streamId }) => {
          const last = ids
            .filter((x) => x.streamId === streamId)
            .map((x) => this.byId.get(x.id)!)
            .at(-1)!;
          return { streamId, nextRevision: last.revision, position: last.position };
        });
      }
      throw new WrongExpectedRevisionError(prepared[0]!.streamId, prepared[0]!.expected, undefined);
    }
    // Check every stream before writing any: all or nothing.
    for (const { streamId, expected } of prepared) {
      const current = this.currentRevision(streamId);
      const ok =
        expected === 'any' ||
        ((expected === 'no_stream' || expected === 'new_stream') && current === undefined) ||
        (expected === 'stream_exists' && current !== undefined) ||
        (typeof expected === 'bigint' && current === expected);
      if (!ok) throw new WrongExpectedRevisionError(streamId, expected, current ?? 'no_stream');
    }
    const recordedAt = this.now();
    const commit = this.written;
    const results = prepared.map(({ streamId, events }) => {
      const stream = this.streams.get(streamId) ?? [];
      this.streams.set(streamId, stream);
      for (const event of events) {
        const recorded: RecordedEvent = {
          ...event,
          streamId,
          revision: BigInt(stream.length),
          position: { commit, prepare: this.written++ },
          recordedAt,
        };
        stream.push(recorded);
        this.log.push(recorded);
        this.byId.set(recorded.id, recorded);
      }
      const last = stream[stream.length - 1]!;
      return { streamId, nextRevision: last.revision, position: last.position };
    });
    this.appended.notify();
    return results;
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<readonly RecordedEvent[]> {
    const backwards = options.direction === 'backwards';
    const until = options.until;
    let events = (this.streams.get(streamId) ?? []).filter((e) => until === undefined || e.recordedAt <= until);
    if (options.fromRevision !== undefined) {
      const from = options.fromRevision;
      events = events.filter((e) => (backwards ? e.revision <= from : e.revision >= from));
    }
    if (backwards) events = [...events].reverse();
    return events.slice(0, options.maxCount ?? events.length);
  }

  async readStreams(streamIds: readonly string[]): Promise<ReadonlyMap<string, readonly RecordedEvent[]>> {
    return new Map(streamIds.map((id) => [id, [...(this.streams.get(id) ?? [])]]));
  }

  async readEvents(refs: readonly EventRef[]): Promise<readonly RecordedEvent[]> {
    return refs.flatMap((ref) => this.streams.get(ref.streamId)?.filter((e) => e.revision === ref.revision) ?? []);
  }

  async findEvents(options: FindEventsOptions): Promise<readonly RecordedEvent[]> {
    const found: RecordedEvent[] = [];
    for (let i = this.log.length - 1; i >= 0 && found.length < options.maxCount; i--)
      if (matchesFind(this.log[i]!, options)) found.push(this.log[i]!);
    return found;
  }

  async readAll(options: ReadAllOptions = {}): Promise<readonly RecordedEvent[]> {
    const from = options.from ?? START;
    return this.log.filter((e) => comparePositions(e.position, from) > 0).slice(0, options.maxCount ?? 1000);
  }

  subscribeToAll(options: SubscribeOptions = {}): AsyncIterable<readonly RecordedEvent[]> {
    return pollAll({
      from: options.from ?? START,
      batchSize: options.batchSize ?? 500,
      signal: options.signal,
      idleWaitMs: 1000,
      readBatch: (from, maxCount) => this.readAll({ from, maxCount }),
      waitForAppend: (ms, signal) => this.appended.wait(ms, signal),
    });
  }

  async countEventsAfter(from: LogPosition, limit: number): Promise<number> {
    return Math.min(limit, this.log.filter((e) => comparePositions(e.position, from) > 0).length);
  }

  async expireStreams(request: ExpireStreamsRequest): Promise<ExpiryReport> {
    const candidates = [...this.streams.entries()]
      .filter(
        ([id, events]) =>
          id.startsWith(request.streamPrefix) && events.length > 0 && events[0]!.recordedAt < request.before,
      )
      .map(([id]) => id);
    let expiredStreams = 0;
    for (let i = 0; i < candidates.length; i += EXPIRY_BATCH) {
      const batch = candidates.slice(i, i + EXPIRY_BATCH);
      const over = await request.over(batch);
      for (const id of batch.filter((candidate) => over.has(candidate))) {
        const events = this.streams.get(id)!;
        for (const event of events) this.byId.delete(event.id);
        const gone = new Set(events);
        this.log.splice(0, this.log.length, ...this.log.filter((e) => !gone.has(e)));
        this.streams.delete(id);
        expiredStreams++;
      }
    }
    return { expiredStreams, keptStreams: candidates.length - expiredStreams, droppedWeeks: [] };
  }

  async importEvents(events: readonly RecordedEvent[]): Promise<LogPosition> {
    const next = new Map<string, bigint>();
    for (const event of events) {
      const expected = next.get(event.streamId) ?? (this.currentRevision(event.streamId) ?? -1n) + 1n;
      if (event.revision !== expected)
        throw new InvalidAppendError(
          `stream ${event.streamId}: revision ${event.revision} taken, ${expected} expected`,
        );
      next.set(event.streamId, expected + 1n);
    }
    const commit = this.written;
    for (const event of events) {
      const stream = this.streams.get(event.streamId) ?? [];
      this.streams.set(event.streamId, stream);
      const recorded: RecordedEvent = { ...event, position: { commit, prepare: this.written++ } };
      stream.push(recorded);
      this.log.push(recorded);
      this.byId.set(recorded.id, recorded);
    }
    this.appended.notify();
    return this.log.at(-1)?.position ?? START;
  }

  async removeStreams(streamIds: readonly string[]): Promise<number> {
    const gone = new Set(streamIds.flatMap((id) => this.streams.get(id) ?? []));
    for (const event of gone) this.byId.delete(event.id);
    for (const id of streamIds) this.streams.delete(id);
    this.log.splice(0, this.log.length, ...this.log.filter((e) => !gone.has(e)));
    return gone.size;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.appended.notify();
  }

  private currentRevision(streamId: string): bigint | undefined {
    const stream = this.streams.get(streamId);
    return stream === undefined || stream.length === 0 ? undefined : stream[stream.length - 1]!.revision;
  }
}
