import type { Pool } from 'pg';
import type { Queryable } from '@chronicle/platform';

/**
 * The event store port: what every adapter (PostgreSQL, KurrentDB, in-memory)
 * offers, and what the contract suite in `testing/` checks each one against.
 */

/**
 * What the writer expects the stream to be before its append. 'new_stream' is
 * 'no_stream' for a stream whose id was made for this append (random, such as
 * a UUIDv7): it cannot exist, so a store may write without looking for it, and
 * a retry of the append is not recognised as one (with an id made for one
 * append there is none). Anything else that expects no stream says 'no_stream'.
 */
export type ExpectedRevision = 'no_stream' | 'new_stream' | 'any' | 'stream_exists' | bigint;

export const NO_STREAM = 'no_stream' satisfies ExpectedRevision;
export const NEW_STREAM = 'new_stream' satisfies ExpectedRevision;
export const ANY = 'any' satisfies ExpectedRevision;
export const STREAM_EXISTS = 'stream_exists' satisfies ExpectedRevision;

export type EventMetadata = Readonly<Record<string, unknown>>;

/** An event as the writer hands it over. Give `id` to make retries idempotent. */
export interface EventToAppend<Type extends string = string, Data = unknown> {
  readonly id?: string;
  readonly type: Type;
  readonly data: Data;
  readonly metadata?: EventMetadata;
}

/**
 * A place in the global log. Positions order as (commit, prepare): for
 * PostgreSQL commit is the writing transaction id and prepare the row's
 * identity; for KurrentDB they are its own commit and prepare positions.
 */
export interface LogPosition {
  readonly commit: bigint;
  readonly prepare: bigint;
}

export const START: LogPosition = Object.freeze({ commit: -1n, prepare: -1n });

export interface RecordedEvent<Type extends string = string, Data = unknown> {
  readonly id: string;
  readonly streamId: string;
  readonly revision: bigint;
  readonly position: LogPosition;
  readonly type: Type;
  readonly data: Data;
  readonly metadata: EventMetadata;
  readonly recordedAt: Date;
}

export interface AppendResult {
  readonly streamId: string;
  /** Revision of the last event now in the stream. */
  readonly nextRevision: bigint;
  /** Position of the last event written by this append. */
  readonly position: LogPosition;
}

export interface StreamAppend {
  readonly streamId: string;
  readonly expected: ExpectedRevision;
  readonly events: readonly EventToAppend[];
}

/** One event of the log, by its stream and revision. */
export interface EventRef {
  readonly streamId: string;
  readonly revision: bigint;
}

export interface ReadStreamOptions {
  readonly direction?: 'forwards' | 'backwards';
  /** Inclusive start revision; defaults to the first (forwards) or last (backwards). */
  readonly fromRevision?: bigint;
  readonly maxCount?: number;
  /** As-of reads: only events recorded at or before this instant. */
  readonly until?: Date;
}

export interface ReadAllOptions {
  /** Exclusive: events strictly after this position. Defaults to START. */
  readonly from?: LogPosition;
  readonly maxCount?: number;
}

/**
 * A filtered read of the global log, newest first: the audit trail's page of events. Each field given
 * narrows it. `team` and `actor` are the metadata's (every decision records its actor; a run's events
 * record its team).
 */
export interface FindEventsOptions {
  /** Only streams whose id starts with this. */
  readonly streamPrefix?: string;
  readonly streamId?: string;
  readonly type?: string;
  readonly team?: string;
  readonly actor?: string;
  /** Recorded at or after. */
  readonly since?: Date;
  /** Recorded before. */
  readonly until?: Date;
  /** Exclusive: events strictly before this position (the last one of the page before). */
  readonly before?: LogPosition;
  readonly maxCount: number;
}

export interface SubscribeOptions {
  /** Exclusive start, normally the subscriber's stored checkpoint. */
  readonly from?: LogPosition;
  readonly batchSize?: number;
  readonly signal?: AbortSignal;
}

export interface ExpireStreamsRequest {
  /**
   * The streams that end: those whose id starts with this. Retention may remove them once they are
   * over; every other stream is kept for ever. The PostgreSQL log lays streams out by it as they
   * begin (es_stream_ends: the streams that end by week), and refuses a prefix it does not keep so.
   */
  readonly streamPrefix: string;
  /**
   * Streams begun before this instant may go. PostgreSQL keeps the log by UTC week and removes a
   * week as a whole: the streams of the weeks that ended by this instant, and never the current week's.
   */
  readonly before: Date;
  /**
   * Of a batch of candidates (ids of streams that end, EXPIRY_BATCH at most), those that are over
   * and may go. A candidate left out is kept, whole: where the store keeps the log by week, it
   * moves on to the current week, and is a candidate again when that week is past.
   */
  readonly over: (streamIds: readonly string[]) => Promise<ReadonlySet<string>>;
}

/** Candidates asked about at a time at most (a batch reads this many rows of the log, and asks about their streams). */
export const EXPIRY_BATCH = 10_000;

export interface ExpiryReport {
  /** Streams removed from the log. */
  readonly expiredStreams: number;
  /** Candidates that were not over, kept (and moved where the store keeps the log by week). */
  readonly keptStreams: number;
  /** What was dropped as a whole: PostgreSQL's week partitions (their Mondays), none elsewhere. */
  readonly droppedWeeks: readonly string[];
}

/** A statement on the read models, as node-postgres takes it (a name prepares it once per connection). */
export interface ReadModelWrite {
  readonly name?: string;
  readonly text: string;
  readonly values: unknown[];
}

/**
 * One decision's writes: the read models' transaction, and the appends to
 * the log that go with it. What the hot path needs, on every store.
 */
export interface UnitOfWork {
  /** The read models' transaction: lock, read and write rows through here. */
  readonly tx: Queryable;
  /**
   * Appends to many streams, each with its expected revision, all or
   * nothing. When `atomic`, the append is part of `tx` and commits with it
   * (take row locks and read first, but write nothing before it: the log's
   * lock-first rule). Otherwise the append commits on its own, at once:
   * a failure after it leaves the rows behind the log until the projector
   * applies the events, and rows stay guarded by their revisions.
   *
   * `writeThrough`: the read models' write that goes with these events (the
   * rows they change), run once the append succeeded: in the same statement
   * as the append when `atomic` (one round trip for log and rows), on `tx`
   * after the append committed otherwise. Its parameters are numbered from
   * $1 as if it ran alone; it must not depend on the append's results.
   */
  append(appends: readonly StreamAppend[], writeThrough?: ReadModelWrite): Promise<readonly AppendResult[]>;
  /** True when the log shares the read models' transaction. */
  readonly atomic: boolean;
}

export interface UnitOfWorkOptions {
  /**
   * Told of each append that committed on its own (not `atomic`: a log that
   * shares no transaction with the read models), as soon as it has and
   * before its write-through runs: what stays in the log if the rest of the
   * unit of work fails. Never called for an atomic append, which rolls back
   * with the transaction.
   */
  readonly onCommittedAppend?: (results: readonly AppendResult[]) => void;
}

export interface EventStore {
  readonly kind: 'postgres' | 'kurrentdb' | 'in-memory';

  /**
   * Runs `work` in a transaction of the read models' pool with the log's
   * appends beside it (one transaction when the log lives in that database),
   * committing when `work` resolves and rolling the transaction back when it
   * throws.
   */
  unitOfWork<T>(readModels: Pool, work: (uow: UnitOfWork) => Promise<T>, options?: UnitOfWorkOptions): Promise<T>;

  appendToStream(streamId: string, expected: ExpectedRevision, events: readonly EventToAppend[]): Promise<AppendResult>;

  /** All or nothing across streams: one conflict fails the whole call. */
  appendToStreams(appends: readonly StreamAppend[]): Promise<readonly AppendResult[]>;

  /** Events of one stream; an unknown stream reads as empty. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<readonly RecordedEvent[]>;

  /**
   * The whole of many streams, each in order, by stream id (an unknown stream reads as empty): a page of
   * runs with their histories in one read where the store allows it, not one read per run.
   */
  readStreams(streamIds: readonly string[]): Promise<ReadonlyMap<string, readonly RecordedEvent[]>>;

  /**
   * Particular events by stream and revision, in the order asked (a page of an index of the log, such as
   * the audit trail's); those the log does not hold are left out.
   */
  readEvents(refs: readonly EventRef[]): Promise<readonly RecordedEvent[]>;

  /**
   * Events of the global log that match `options`, newest first (in reverse commit order), `maxCount` at
   * most. PostgreSQL answers a team's from an index of the log; KurrentDB reads `$all` backwards, the
   * stream prefix filtered on the server.
   */
  findEvents(options: FindEventsOptions): Promise<readonly RecordedEvent[]>;

  /**
   * The global log after `from`, in commit order, gap-free: it never returns
   * an event while an earlier-ordered one may still commit.
   */
  readAll(options?: ReadAllOptions): Promise<readonly RecordedEvent[]>;

  /**
   * Catch-up subscription to the global log: yields batches in order, first the
   * history after `from`, then new events as they commit, until `signal` aborts.
   * Durability is the subscriber's: it stores the last position of each batch it
   * has handled (see ProjectionRunner) and passes it back as `from`.
   */
  subscribeToAll(options?: SubscribeOptions): AsyncIterable<readonly RecordedEvent[]>;

  /**
   * How many events the global log holds after `from` (exclusive), counting
   * at most `limit`: how far a reader at `from` (a projection's checkpoint)
   * is behind the log's head. Bounded so that asking is cheap whatever the lag.
   */
  countEventsAfter(from: LogPosition, limit: number): Promise<number>;

  /**
   * Retention of the log: removes the streams that end, begun before `request.before`, that
   * `request.over` says are over; no other stream is touched. A stream goes whole or not at all, and
   * the global log reads the same for every other event (their positions stay). Readers of a removed
   * stream find it empty. Where the store keeps the log in partitions, it also makes them ahead. One
   * pass at a time over all processes; a pass that finds another running reports nothing done.
   */
  expireStreams(request: ExpireStreamsRequest): Promise<ExpiryReport>;

  /**
   * Streams taken from another log, as a shard moved to another server takes its runs' streams
   * (docs/sharding.md): `events`, in that log's order, written here as they were recorded (ids,
   * revisions, types, data, metadata, times), each stream going on from its head here. All or nothing;
   * refused when a stream's first revision given does not follow its head. Nothing is decided: these
   * are decisions made elsewhere. Resolves with how many were written. A store that is one log for
   * every server (KurrentDB) has nothing to move and refuses (EventStoreUnsupportedError). Resolves
   * with the position of the last one here (START for none).
   */
  importEvents(events: readonly RecordedEvent[]): Promise<LogPosition>;

  /**
   * The other half of such a move: the streams, whole, removed from this log once the other log holds
   * them. Resolves with the number of events removed. Refused as importEvents is.
   */
  removeStreams(streamIds: readonly string[]): Promise<number>;

  /** Resolves when the store answers; rejects with EventStoreUnavailableError otherwise. */
  ping(): Promise<void>;

  close(): Promise<void>;
}

export function comparePositions(a: LogPosition, b: LogPosition): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}
