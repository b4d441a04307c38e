import type { Pool } from 'pg';
import { type Queryable, isUnavailable, WakeSignal, withTransaction } from '@chronicle/platform';
import { prepareAppends } from '../append-validation';
import { EventStoreUnavailableError } from '../event-store.errors';
import {
  START,
  type AppendResult,
  type EventStore,
  type EventToAppend,
  type ExpectedRevision,
  type LogPosition,
  type ReadAllOptions,
  type ReadModelWrite,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type UnitOfWork,
  type UnitOfWorkOptions,
  type EventRef,
  type ExpireStreamsRequest,
  type ExpiryReport,
  type FindEventsOptions,
} from '../event-store.port';
import { separateUnitOfWork } from '../separate-unit-of-work';
import { pollAll } from '../subscription-loop';
import { appendEvents } from './append-events.sql';
import { expireStreams } from './expire-streams.sql';
import { importEvents, removeStreams } from './move-streams.sql';
import {
  countEventsAfter,
  findEvents,
  readAllEvents,
  readEventsAt,
  readStreamEvents,
  readStreamsEvents,
} from './read-events.sql';

export interface PostgresEventStoreOptions {
  /** Idle wait of a caught-up subscription before it reads again (appends in this process wake it at once). */
  readonly idleWaitMs?: number;
  /** The pool is the store's own (a log in a database of its own): close() ends it. */
  readonly ownsPool?: boolean;
}

/** The default store: the `events` table and es_append of migrations/0001. */
export class PostgresEventStore implements EventStore {
  readonly kind = 'postgres';
  private readonly appended = new WakeSignal();
  private readonly idleWaitMs: number;
  private readonly ownsPool: boolean;

  constructor(
    private readonly pool: Pool,
    options: PostgresEventStoreOptions = {},
  ) {
    this.idleWaitMs = options.idleWaitMs ?? 100;
    this.ownsPool = options.ownsPool ?? false;
  }

  async appendToStream(
    streamId: string,
    expected: ExpectedRevision,
    events: readonly EventToAppend[],
  ): Promise<AppendResult> {
    const [result] = await this.appendToStreams([{ streamId, expected, events }]);
    return result!;
  }

  async appendToStreams(appends: readonly StreamAppend[]): Promise<readonly AppendResult[]> {
    const results = await guard(() => appendEvents(this.pool, prepareAppends(appends)));
    this.appended.notify();
    return results;
  }

  /**
   * In the read models' own database (the pool this store was made with),
   * appends join the transaction: one commit for log and rows. A log in
   * another database commits on its own, first.
   */
  async unitOfWork<T>(
    readModels: Pool,
    work: (uow: UnitOfWork) => Promise<T>,
    options?: UnitOfWorkOptions,
  ): Promise<T> {
    if (readModels !== this.pool) return separateUnitOfWork(this, readModels, work, options);
    // Subscribers are not woken per commit: the rows are written through, and a
    // wake-up per decision would have every projection read the log after every
    // claim and completion. They find the events at their next poll.
    return withTransaction(
      readModels,
      (tx) => work({ tx, atomic: true, append: (appends, writeThrough) => this.appendWith(tx, appends, writeThrough) }),
      { genericPlans: true },
    );
  }

  /**
   * Append inside the caller's transaction (write-through of read models).
   * Call it before the transaction writes anything else; the caller notifies
   * nobody until commit, so subscribers find the events by polling.
   */
  appendWith(db: Queryable, appends: readonly StreamAppend[], writeThrough?: ReadModelWrite): Promise<AppendResult[]> {
    return guard(() => appendEvents(db, prepareAppends(appends), writeThrough));
  }

  readStream(streamId: string, options?: ReadStreamOptions): Promise<readonly RecordedEvent[]> {
    return guard(() => readStreamEvents(this.pool, streamId, options));
  }

  readStreams(streamIds: readonly string[]): Promise<ReadonlyMap<string, readonly RecordedEvent[]>> {
    return guard(() => readStreamsEvents(this.pool, streamIds));
  }

  readEvents(refs: readonly EventRef[]): Promise<readonly RecordedEvent[]> {
    return guard(() => readEventsAt(this.pool, refs));
  }

  findEvents(options: FindEventsOptions): Promise<readonly RecordedEvent[]> {
    return guard(() => findEvents(this.pool, options));
  }

  readAll(options: ReadAllOptions = {}): Promise<readonly RecordedEvent[]> {
    return guard(() => readAllEvents(this.pool, options.from ?? START, options.maxCount ?? 1000));
  }

  subscribeToAll(options: SubscribeOptions = {}): AsyncIterable<readonly RecordedEvent[]> {
    return pollAll({
      from: options.from ?? START,
      batchSize: options.batchSize ?? 500,
      signal: options.signal,
      idleWaitMs: this.idleWaitMs,
      readBatch: (from, maxCount) => this.readAll({ from, maxCount }),
      waitForAppend: (ms, signal) => this.appended.wait(ms, signal),
    });
  }

  countEventsAfter(from: LogPosition, limit: number): Promise<number> {
    return guard(() => countEventsAfter(this.pool, from, limit));
  }

  /** By week partitions: see expire-streams.sql.ts. */
  expireStreams(request: ExpireStreamsRequest): Promise<ExpiryReport> {
    return guard(() => expireStreams(this.pool, request));
  }

  importEvents(events: readonly RecordedEvent[]): Promise<LogPosition> {
    return guard(() => importEvents(this.pool, events));
  }

  removeStreams(streamIds: readonly string[]): Promise<number> {
    return guard(() => removeStreams(this.pool, streamIds));
  }

  async ping(): Promise<void> {
    await guard(() => this.pool.query('SELECT 1 FROM events LIMIT 0'));
  }

  async close(): Promise<void> {
    this.appended.notify();
    if (this.ownsPool) await this.pool.end();
  }
}

async function guard<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isUnavailable(err))
      throw new EventStoreUnavailableError(`PostgreSQL event store unavailable: ${(err as Error).message}`, {
        cause: err,
      });
    throw err;
  }
}
