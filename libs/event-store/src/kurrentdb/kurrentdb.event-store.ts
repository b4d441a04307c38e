import type { Pool } from 'pg';
import type {
  AllStreamResolvedEvent,
  AppendStreamState,
  CommandError,
  CurrentStreamState,
  EventData,
  JSONType,
  KurrentDBClient,
  Position,
  ReadPosition,
  WrongExpectedVersionError,
} from '@kurrent/kurrentdb-client';
import type * as KurrentClient from '@kurrent/kurrentdb-client';

import { prepareAppends, type PreparedAppend, type PreparedEvent } from '../append-validation';
import {
  EventStoreUnavailableError,
  EventStoreUnsupportedError,
  InvalidAppendError,
  WrongExpectedRevisionError,
} from '../event-store.errors';
import {
  START,
  comparePositions,
  type AppendResult,
  type EventMetadata,
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

type KurrentModule = typeof KurrentClient;

let kurrentModule: Promise<KurrentModule> | undefined;

/**
 * Loaded on first use, never at module scope: PostgreSQL-only installs must not load the client or its
 * native bridge.
 */
function loadKurrent(): Promise<KurrentModule> {
  // require, not import(): in CommonJS output import() goes through ESM loading of a CommonJS package,
  // whose named exports Node can only guess.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (kurrentModule ??= Promise.resolve(require('@kurrent/kurrentdb-client') as KurrentModule));
}

export async function createKurrentDbEventStore(connectionString: string): Promise<KurrentDbEventStore> {
  const { KurrentDBClient } = await loadKurrent();
  return new KurrentDbEventStore(KurrentDBClient.connectionString(connectionString));
}

const DEFAULT_BATCH_SIZE = 500;
/** As the other adapters: an unbounded read of the whole log would hold it all in memory. */
const DEFAULT_READ_ALL_COUNT = 1000;
/** Stream reads go through the client's native bridge, which takes no deadline: ping() bounds itself. */
const PING_TIMEOUT_MS = 5_000;
/** readStreams: reads in flight at once on the client's one connection. */
const PARALLEL_STREAM_READS = 16;
/** Whose metadata holds expireStreams' progress: where its reading of $all got to, and the candidates not over yet. */
const EXPIRY_STREAM = 'scheduler-log-expiry';

interface ExpiryProgress extends Record<string, unknown> {
  readonly fromCommit: string;
  readonly fromPrepare: string;
  readonly pending: readonly string[];
}

function readExpiryProgress(metadata: Record<string, unknown> | undefined): { from: LogPosition; pending: string[] } {
  const { fromCommit, fromPrepare, pending } = (metadata ?? {}) as Partial<ExpiryProgress>;
  if (typeof fromCommit !== 'string' || typeof fromPrepare !== 'string') return { from: START, pending: [] };
  return {
    from: { commit: BigInt(fromCommit), prepare: BigInt(fromPrepare) },
    pending: Array.isArray(pending) ? pending.filter((id): id is string => typeof id === 'string') : [],
  };
}

/** Read by ping(); it need not exist, an unknown stream is an answer too. */
const PING_STREAM = 'scheduler-ping';

export class KurrentDbEventStore implements EventStore {
  readonly kind = 'kurrentdb';

  constructor(private readonly client: KurrentDBClient) {}

  async appendToStream(
    streamId: string,
    expected: ExpectedRevision,
    events: readonly EventToAppend[],
  ): Promise<AppendResult> {
    const [prepared] = prepareAppends([{ streamId, expected, events }]);
    const lib = await loadKurrent();
    const result = await this.client
      .appendToStream(streamId, toEventData(lib, prepared!.events), { streamState: toStreamState(expected) })
      .catch((err: unknown) => Promise.reject(mapKurrentError(err, { expected: new Map([[streamId, expected]]) })));
    // Only with throwOnAppendFailure=false in the connection string does a conflict come back as a result; its
    // revision is then unreliable (the batch-append path reports a boolean), so the actual revision stays unknown.
    if (!result.success) throw new WrongExpectedRevisionError(streamId, expected, undefined);
    const nextRevision = result.nextExpectedRevision;
    // The server may answer an idempotent retry without a position; the last event, read back, has it.
    const position =
      result.position ?? (await this.readStream(streamId, { fromRevision: nextRevision, maxCount: 1 }))[0]?.position;
    return { streamId, nextRevision, position: copyPosition(position) };
  }

  unitOfWork<T>(readModels: Pool, work: (uow: UnitOfWork) => Promise<T>, options?: UnitOfWorkOptions): Promise<T> {
    return separateUnitOfWork(this, readModels, work, options);
  }

  async appendToStreams(appends: readonly StreamAppend[]): Promise<readonly AppendResult[]> {
    const prepared = prepareAppends(appends);
    assertStringMetadata(prepared);
    const lib = await loadKurrent();
    const requests = prepared.map(({ streamId, expected, events }) => ({
      streamName: streamId,
      expectedState: toStreamState(expected),
      events: toEventData(lib, events),
    }));
    const expectedByStream = new Map(prepared.map(({ streamId, expected }) => [streamId, expected]));
    const result = await this.client
      .multiStreamAppend(requests)
      .catch((err: unknown) => Promise.reject(mapKurrentError(err, { expected: expectedByStream })));
    const revisions = new Map(result.responses.map((response) => [response.streamName, response.revision]));
    // The server reports one log position for the whole atomic append, not one per stream or event, so every
    // result carries that position as both commit and prepare.
    const position: LogPosition = { commit: result.position, prepare: result.position };
    return prepared.map(({ streamId }) => {
      const nextRevision = revisions.get(streamId);
      if (nextRevision === undefined) throw new Error(`KurrentDB reported no revision for stream ${streamId}`);
      return { streamId, nextRevision, position };
    });
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<readonly RecordedEvent[]> {
    const forwards = options.direction !== 'backwards';
    const limit = countLimit(options.maxCount);
    const from = options.fromRevision;
    // The client rejects negative revisions; before the first event there is nothing to read backwards.
    if (limit === 0 || (from !== undefined && from < 0n && !forwards)) return [];
    const until = options.until?.getTime();
    const events: RecordedEvent[] = [];
    try {
      const read = this.client.readStream(streamId, {
        direction: forwards ? 'forwards' : 'backwards',
        fromRevision: from !== undefined && from >= 0n ? from : forwards ? 'start' : 'end',
        // Backwards with `until`, the newer events skipped must not use up the count: we count ourselves then.
        ...(limit !== undefined && until === undefined ? { maxCount: limit } : {}),
      });
      for await (const resolved of read) {
        const event = toRecordedEvent(resolved);
        if (event === undefined) continue;
        if (until !== undefined && event.recordedAt.getTime() > until) {
          // A stream is recorded in order: going forwards, nothing after this one can qualify.
          if (forwards) break;
          continue;
        }
        events.push(event);
        if (limit !== undefined && events.length >= limit) break;
      }
    } catch (err) {
      if (isKurrentError(err, 'stream-not-found')) return [];
      throw mapKurrentError(err);
    }
    return events;
  }

  /** The server reads one stream per call: a few at a time, each in full. */
  async readStreams(streamIds: readonly string[]): Promise<ReadonlyMap<string, readonly RecordedEvent[]>> {
    const ids = [...new Set(streamIds)];
    const byStream = new Map<string, readonly RecordedEvent[]>();
    for (let i = 0; i < ids.length; i += PARALLEL_STREAM_READS) {
      const chunk = ids.slice(i, i + PARALLEL_STREAM_READS);
      const read = await Promise.all(chunk.map((id) => this.readStream(id)));
      chunk.forEach((id, j) => byStream.set(id, read[j]!));
    }
    return byStream;
  }

  async readEvents(refs: readonly EventRef[]): Promise<readonly RecordedEvent[]> {
    const found: RecordedEvent[] = [];
    for (let i = 0; i < refs.length; i += PARALLEL_STREAM_READS) {
      const chunk = refs.slice(i, i + PARALLEL_STREAM_READS);
      const read = await Promise.all(
        chunk.map((ref) => this.readStream(ref.streamId, { fromRevision: ref.revision, maxCount: 1 })),
      );
      chunk.forEach((ref, j) => {
        const event = read[j]![0];
        if (event?.revision === ref.revision) found.push(event);
      });
    }
    return found;
  }

  async readAll(options: ReadAllOptions = {}): Promise<readonly RecordedEvent[]> {
    const from = options.from ?? START;
    const limit = countLimit(options.maxCount) ?? DEFAULT_READ_ALL_COUNT;
    if (limit === 0) return [];
    const fromStart = comparePositions(from, START) <= 0;
    const lib = await loadKurrent();
    const events: RecordedEvent[] = [];
    try {
      const read = this.client.readAll({
        fromPosition: toReadPosition(from),
        filter: lib.excludeSystemEvents(),
        // A read from a position includes the event at it, which the port excludes: one more makes up for it.
        maxCount: fromStart ? limit : limit + 1,
      });
      for await (const resolved of read) {
        const event = toRecordedEvent(resolved);
        if (event === undefined || isSystemEvent(event) || comparePositions(event.position, from) <= 0) continue;
        events.push(event);
        if (events.length >= limit) break;
      }
    } catch (err) {
      throw mapKurrentError(err);
    }
    return events;
  }

  /**
   * A stream's events backwards, or `$all` backwards from `before` with the stream prefix filtered on the
   * server; the other filters (the metadata's team and actor, type, time) are applied here, reading on
   * until `maxCount` match or the log ends. KurrentDB keeps no index by metadata: a filter that few events
   * match reads far back.
   */
  async findEvents(options: FindEventsOptions): Promise<readonly RecordedEvent[]> {
    if (options.maxCount <= 0) return [];
    if (options.streamId !== undefined)
      return (await this.readStream(options.streamId, { direction: 'backwards' }))
        .filter((event) => matchesFind(event, options))
        .slice(0, options.maxCount);
    const lib = await loadKurrent();
    const found: RecordedEvent[] = [];
    try {
      const read = this.client.readAll({
        direction: 'backwards',
        fromPosition: options.before === undefined ? 'end' : toReadPosition(options.before),
        filter:
          options.streamPrefix === undefined
            ? lib.excludeSystemEvents()
            : lib.streamNameFilter({ prefixes: [options.streamPrefix] }),
      });
      for await (const resolved of read) {
        const event = toRecordedEvent(resolved);
        if (event === undefined || isSystemEvent(event) || !matchesFind(event, options)) continue;
        found.push(event);
        if (found.length >= options.maxCount) break;
      }
    } catch (err) {
      throw mapKurrentError(err);
    }
    return found;
  }

  /** KurrentDB numbers no events globally: the events after `from` are read (their count only kept), `limit` at most. */
  async countEventsAfter(from: LogPosition, limit: number): Promise<number> {
    return (await this.readAll({ from, maxCount: limit })).length;
  }

  async *subscribeToAll(options: SubscribeOptions = {}): AsyncGenerator<readonly RecordedEvent[]> {
    const { signal } = options;
    const from = options.from ?? START;
    const batchSize = Math.max(1, Math.floor(options.batchSize ?? DEFAULT_BATCH_SIZE));
    if (signal?.aborted) return;
    const lib = await loadKurrent();
    const subscription = this.client.subscribeToAll(
      { fromPosition: toReadPosition(from), filter: lib.excludeSystemEvents() },
      // About one batch of buffer: past it the client stops pulling, and gRPC flow control holds the server back.
      { highWaterMark: batchSize },
    );
    let failure: unknown;
    let ended = false;
    let wake = (): void => undefined;
    // These listeners live as long as the subscription: an 'error' emitted with no listener would crash the process.
    subscription.on('readable', () => wake());
    subscription.on('error', (err) => {
      failure ??= err;
      wake();
    });
    // 'close' too: a stream destroyed without an error never emits 'end'.
    for (const last of ['end', 'close'] as const)
      subscription.on(last, () => {
        ended = true;
        wake();
      });
    const onAbort = (): void => wake();
    signal?.addEventListener('abort', onAbort);
    try {
      while (!signal?.aborted) {
        // Take only what is already buffered, so a quiet log yields small batches at once rather than waiting.
        const batch: RecordedEvent[] = [];
        let taken = 0;
        for (; taken < batchSize; taken++) {
          const resolved = subscription.read() as AllStreamResolvedEvent | null;
          if (resolved === null) break;
          const event = toRecordedEvent(resolved);
          // The server starts after `from` already; the position check keeps that promise whatever the server does.
          if (event !== undefined && !isSystemEvent(event) && comparePositions(event.position, from) > 0)
            batch.push(event);
        }
        if (taken > 0) {
          if (batch.length > 0) yield batch;
          continue;
        }
        if (failure !== undefined) throw mapKurrentError(failure);
        // A catch-up subscription never ends by itself; the subscriber must resubscribe from its checkpoint.
        if (ended) throw new EventStoreUnavailableError('KurrentDB ended the $all subscription');
        await new Promise<void>((resolve) => (wake = resolve));
        wake = () => undefined;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      await subscription.unsubscribe().catch(() => undefined);
      subscription.destroy();
    }
  }

  /**
   * KurrentDB has no partitions to drop: a stream that is over is deleted (a soft delete, which is
   * truncation: it reads as empty, and the server's scavenge reclaims its space). Candidates are
   * found by reading `$all` for streams that end (a server-side filter by name), from where the last
   * pass stopped, up to the first event recorded at or after `before`; those not over yet are
   * carried to the next pass. Both are kept in the metadata of EXPIRY_STREAM (system events, which
   * no reader of the log sees).
   */
  async expireStreams(request: ExpireStreamsRequest): Promise<ExpiryReport> {
    const lib = await loadKurrent();
    try {
      const { metadata, metastreamRevision } = await this.client.getStreamMetadata<ExpiryProgress>(EXPIRY_STREAM);
      const progress = readExpiryProgress(metadata);
      const found: string[] = [];
      let from = progress.from;
      for (let done = false; !done;) {
        let read = 0;
        for await (const resolved of this.client.readAll({
          fromPosition: toReadPosition(from),
          filter: lib.streamNameFilter({ prefixes: [request.streamPrefix] }),
          maxCount: EXPIRY_BATCH,
        })) {
          const event = toRecordedEvent(resolved);
          if (event === undefined || comparePositions(event.position, from) <= 0) continue;
          read++;
          if (event.recordedAt >= request.before) {
            done = true;
            break;
          }
          if (event.revision === 0n && event.streamId.startsWith(request.streamPrefix)) found.push(event.streamId);
          from = event.position;
        }
        if (read === 0) done = true;
      }
      const candidates = [...new Set([...progress.pending, ...found])];
      const pending: string[] = [];
      let expiredStreams = 0;
      for (let i = 0; i < candidates.length; i += EXPIRY_BATCH) {
        const batch = candidates.slice(i, i + EXPIRY_BATCH);
        const over = await request.over(batch);
        for (const id of batch) {
          if (!over.has(id)) {
            pending.push(id);
            continue;
          }
          await this.client.deleteStream(id).catch((err: unknown) => {
            // Already gone (by an earlier pass that stopped before saving its progress): nothing to do.
            if (!isKurrentError(err, 'stream-deleted') && !isKurrentError(err, 'stream-not-found')) throw err;
          });
          expiredStreams++;
        }
      }
      const saved: ExpiryProgress = {
        fromCommit: from.commit.toString(),
        fromPrepare: from.prepare.toString(),
        pending,
      };
      await this.client.setStreamMetadata<ExpiryProgress>(EXPIRY_STREAM, saved, {
        expectedRevision: metastreamRevision ?? 'no_stream',
      });
      return { expiredStreams, keptStreams: pending.length, droppedWeeks: [] };
    } catch (err) {
      // Another pass saved its progress first: this one's work is done by it or by the next.
      if (isKurrentError(err, 'wrong-expected-version')) return { expiredStreams: 0, keptStreams: 0, droppedWeeks: [] };
      throw mapKurrentError(err);
    }
  }

  async ping(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new EventStoreUnavailableError(`KurrentDB did not answer within ${PING_TIMEOUT_MS} ms`)),
        PING_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([this.probe(), timeout]);
    } catch (err) {
      // Any failure means not ready, access denied included: readiness checks want one answer.
      if (err instanceof EventStoreUnavailableError) throw err;
      throw new EventStoreUnavailableError(
        `KurrentDB did not answer: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** One log for every server: a shard's runs move with their read models alone, their streams stay. */
  async importEvents(): Promise<LogPosition> {
    throw new EventStoreUnsupportedError('KurrentDB is one log for every run server: no streams move between logs');
  }

  async removeStreams(): Promise<number> {
    throw new EventStoreUnsupportedError('KurrentDB is one log for every run server: no streams move between logs');
  }

  async close(): Promise<void> {
    await this.client.dispose();
  }

  private async probe(): Promise<void> {
    try {
      for await (const _ of this.client.readStream(PING_STREAM, {
        direction: 'backwards',
        fromRevision: 'end',
        maxCount: 1,
      }))
        break;
    } catch (err) {
      if (!isKurrentError(err, 'stream-not-found')) throw err;
    }
  }
}

export interface KurrentErrorContext {
  /** What the failed call expected of each stream it wrote to: the caller gets its own expectation back. */
  readonly expected?: ReadonlyMap<string, ExpectedRevision>;
}

const UNAVAILABLE_TYPES: ReadonlySet<string> = new Set<`${CommandError['type']}`>([
  'unavailable',
  'not-leader',
  'deadline-exceeded',
  'cancelled',
  'timeout',
]);
/** gRPC CANCELLED, DEADLINE_EXCEEDED and UNAVAILABLE: some calls (appends among them) let these through unconverted. */
const UNAVAILABLE_GRPC_CODES: ReadonlySet<number> = new Set([1, 4, 14]);
/** Cluster discovery gives up with a plain Error. */
const DISCOVERY_FAILED = /^Failed to discover after \d+ attempts/;

/** Returns the port's error for a client error, or the error itself when the port has none for it. */
export function mapKurrentError(err: unknown, context: KurrentErrorContext = {}): unknown {
  if (!(err instanceof Error)) return err;
  if (isKurrentError<WrongExpectedVersionError>(err, 'wrong-expected-version')) {
    const onlyStream = context.expected?.size === 1 ? [...context.expected.keys()][0] : undefined;
    const streamId = err.streamName || onlyStream || '';
    const expected = context.expected?.get(streamId) ?? toExpectedRevision(err.expectedState);
    return new WrongExpectedRevisionError(streamId, expected, toActualRevision(err.actualState));
  }
  const { type, code } = err as { type?: unknown; code?: unknown };
  const unavailable =
    (typeof type === 'string' && UNAVAILABLE_TYPES.has(type)) ||
    (typeof code === 'number' && UNAVAILABLE_GRPC_CODES.has(code)) ||
    DISCOVERY_FAILED.test(err.message);
  return unavailable ? new EventStoreUnavailableError(`KurrentDB is unavailable: ${err.message}`, { cause: err }) : err;
}

/**
 * By the client's `type` tag, not instanceof: this file holds no value import of the client, and a
 * second copy of the package would defeat instanceof anyway.
 */
function isKurrentError<E extends CommandError>(err: unknown, type: `${E['type']}`): err is E {
  return err instanceof Error && (err as { type?: unknown }).type === type;
}

/** The server checks for a stream cheaply, by its index: a new stream is expected as any other absent one. */
function toStreamState(expected: ExpectedRevision): AppendStreamState {
  return expected === 'new_stream' ? 'no_stream' : expected;
}

/** Older servers report expectations in their numeric form: -1 no stream, -2 any, -4 stream exists. */
function toExpectedRevision(state: AppendStreamState | undefined): ExpectedRevision {
  if (state === -1n) return 'no_stream';
  if (state === -4n) return 'stream_exists';
  if (state === undefined || state === -2n) return 'any';
  return state;
}

/** Other negative states (deleted -5, tombstoned -6) are no revision the caller can expect, so they stay unknown. */
function toActualRevision(state: CurrentStreamState | undefined): bigint | 'no_stream' | undefined {
  if (state === 'no_stream' || state === -1n) return 'no_stream';
  return typeof state === 'bigint' && state >= 0n ? state : undefined;
}

/** The client's multi-stream append takes metadata values as strings only (client 1.3; to be lifted upstream). */
function assertStringMetadata(appends: readonly PreparedAppend[]): void {
  for (const { streamId, events } of appends) {
    for (const { type, metadata } of events) {
      const key = Object.keys(metadata).find((k) => typeof metadata[k] !== 'string');
      if (key !== undefined)
        throw new InvalidAppendError(
          `metadata ${key} of a ${type} event in stream ${streamId} is not a string, as KurrentDB multi-stream appends require`,
        );
    }
  }
}

function toEventData(lib: KurrentModule, events: readonly PreparedEvent[]): EventData[] {
  // The client types JSON data as object, array or string, but serialises any value with JSON.stringify.
  return events.map(({ id, type, data, metadata }) => lib.jsonEvent({ id, type, data: data as JSONType, metadata }));
}

/** The part of the client's resolved events (stream reads, $all reads, subscriptions) we map. */
interface ResolvedLike {
  readonly event?: {
    id: string;
    streamId: string;
    revision: bigint;
    type: string;
    created: Date;
    data: unknown;
    metadata: unknown;
    position?: Position | undefined;
  };
  readonly commitPosition?: bigint | undefined;
}

function toRecordedEvent({ event, commitPosition }: ResolvedLike): RecordedEvent | undefined {
  if (event === undefined) return undefined;
  // Stream reads leave out positions only on servers older than 22.6; fall back to what there is.
  const position =
    event.position ?? (commitPosition === undefined ? undefined : { commit: commitPosition, prepare: commitPosition });
  const { id, streamId, revision, type, data, metadata, created } = event;
  return {
    id,
    streamId,
    revision,
    position: copyPosition(position),
    type,
    data,
    metadata: isJsonObject(metadata) ? metadata : {},
    recordedAt: created,
  };
}

/** START stands in for a position the server did not give, never expected from a 25.1+ server. */
function copyPosition(position: Position | undefined): LogPosition {
  return position === undefined ? START : { commit: position.commit, prepare: position.prepare };
}

function toReadPosition(from: LogPosition): ReadPosition {
  return comparePositions(from, START) <= 0 ? 'start' : { commit: from.commit, prepare: from.prepare };
}

/** Metadata that is not a JSON object (binary, array, none) has nothing the port can carry. */
function isJsonObject(value: unknown): value is EventMetadata {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function isSystemEvent(event: RecordedEvent): boolean {
  return event.type.startsWith('$');
}

/** Undefined means no limit: the client then reads everything by default. */
function countLimit(maxCount: number | undefined): number | undefined {
  if (maxCount === undefined || !Number.isFinite(maxCount)) return undefined;
  return Math.max(0, Math.floor(maxCount));
}
