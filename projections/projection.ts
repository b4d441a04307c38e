import type { Queryable } from '@chronicle/platform';
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
  apply(db: Queryable, events: readonly RecordedEvent[]): Promise<void>;
  /** Empties the projection's tables before a rebuild. */
  reset(db: Queryable): Promise<void>;
}
