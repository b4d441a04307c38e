import type { CopyConnection, Queryable } from '@chronicle/platform';
import type { RecordedEvent } from '@chronicle/event-store';

/**
 * A read model built from the log. `apply` runs inside the runner's
 * transaction, together with the checkpoint, and must be idempotent by stream
 * revision: a row records the revision it reflects and ignores older ones, so
 * redelivery after a crash or a rebuild changes nothing.
 */
export interface Projection {
  readonly name: string;
  /** Bump when the projection's logic or tables change: the runner rebuilds it. */
  readonly version: number;
  /** Events of these types are applied; others only move the checkpoint. */
  readonly eventTypes: ReadonlySet<string> | 'all';
  /**
   * The tables it owns, in the default schema: emptied by `reset`, built
   * afresh beside the live ones by a rebuild (which runs `apply` with a
   * shadow schema first in the search path) and swapped in.
   */
  readonly tables: readonly string[];
  /**
   * Tables `apply` writes besides its own, owned by another role (the jobs projection tells the
   * scheduler's `schedule_cursors` a job changed). A rebuild or verify gives them empty scratch copies
   * in its schema, never compared, swapped or read again, so that it leaves the live ones alone.
   */
  readonly sideTables?: readonly string[];
  /**
   * Commands write these tables' rows too, in their own transactions (the
   * write-through of runs and jobs), each row with the revision of the
   * stream it reflects: a rebuild then takes the live rows that are newer
   * than the log it read. A table only the projector writes (counters) is
   * exactly the log up to the checkpoint and takes nothing from the live one.
   */
  readonly writtenThrough: boolean;
  apply(db: Queryable, events: readonly RecordedEvent[]): Promise<void>;
  /**
   * Optional, for tables that start empty (a rebuild's shadows): a builder that folds the events in
   * memory across batches and writes the rows in bulk, instead of reading and writing rows per batch
   * as `apply` does. Rows must come out as `apply` would have written them.
   */
  bulkBuild?(): BulkBuild;
  /** Empties the projection's tables before a rebuild. */
  reset(db: Queryable): Promise<void>;
}

/**
 * A projection filled from empty in bulk. `add` takes the events of the projection's types in log
 * order, batch after batch, and may hold them in memory or write some rows through `io`; `flush`
 * writes all it holds. Once `flush` resolves and `io`'s writes are done, the tables are as `apply`
 * would have left them, and `apply` goes on from there.
 */
export interface BulkBuild {
  add(io: BulkIo, events: readonly RecordedEvent[]): Promise<void>;
  flush(io: BulkIo): Promise<void>;
}

/**
 * How a bulk build reaches its tables. Its writes run one after another, each in a transaction of
 * its own, in the background: the build goes on folding the next events while the server takes in
 * the rows. A read sees every write queued before it.
 */
export interface BulkIo {
  /** Queues `work`; resolves once at most this one waits behind the write running (memory stays bounded). */
  write(work: (db: CopyConnection) => Promise<void>): Promise<void>;
  /** `work` once the writes queued so far have committed. */
  read<T>(work: (db: Queryable) => Promise<T>): Promise<T>;
}
