import type { Pool } from 'pg';
import { RUN_STREAM_PREFIX } from '@chronicle/domain';
import type { AppendResult, EventStore, UnitOfWork } from '@chronicle/event-store';
import type { JsonLogger, Queryable } from '@chronicle/platform';
import { findRunRevisions } from '@chronicle/projections';

export interface RunReservationLimits {
  /** Past this age a reservation goes even if its row never caught up (no projector running): logged. */
  readonly maxAgeMs: number;
  /** The reserved runs' rows are looked at this often at most, in one query for them all. */
  readonly checkEveryMs: number;
  /** Reservations kept at most, the oldest dropped first: they save wasted appends, the append still decides. */
  readonly maxReserved: number;
}

export const DEFAULT_RUN_RESERVATION_LIMITS: RunReservationLimits = {
  maxAgeMs: 5 * 60_000,
  checkEveryMs: 1000,
  maxReserved: 10_000,
};

/**
 * Runs whose events are in the log but whose rows are not (claim protocol,
 * docs/architecture.md, "The unit of work"): with a log of its own, a unit of work commits its appends
 * first; when its read-model transaction then fails, the rows lag the log
 * until the projector applies the events, and a claim (or a scheduler pass)
 * would propose those runs again only for the append to refuse them, on
 * every try. This process remembers each such run with the revision it
 * appended and keeps it out of its claims and passes until the row shows
 * that revision (or the reservation is too old). In-process and bounded: a
 * crash forgets them, and then the append alone decides, as it always does.
 */
export class RunReservations {
  /** Run id -> the revision appended, and since when (Map order: oldest first). */
  private readonly reserved = new Map<string, { revision: number; since: number }>();
  private nextCheck = 0;

  constructor(
    private readonly logger: Pick<JsonLogger, 'warn'>,
    private readonly limits: RunReservationLimits = DEFAULT_RUN_RESERVATION_LIMITS,
  ) {}

  /**
   * `store.unitOfWork` for decisions on runs. When the log shares no
   * transaction with the read models and the unit of work fails after
   * appends committed, the runs appended stay reserved.
   */
  async unitOfWork<T>(store: EventStore, readModels: Pool, work: (uow: UnitOfWork) => Promise<T>): Promise<T> {
    const appended = new Map<string, number>();
    // The runs whose appends committed on their own: a failing write after them leaves them reserved.
    const onCommittedAppend = (results: readonly AppendResult[]): void => {
      for (const { streamId, nextRevision } of results)
        if (streamId.startsWith(RUN_STREAM_PREFIX))
          appended.set(streamId.slice(RUN_STREAM_PREFIX.length), Number(nextRevision));
    };
    try {
      return await store.unitOfWork(readModels, work, { onCommittedAppend });
    } catch (err) {
      this.reserve(appended);
      throw err;
    }
  }

  /**
   * The runs to leave out of a claim or a pass now. Releases those whose
   * rows caught up (one query, at most every `checkEveryMs`) and those too
   * old; no query at all while nothing is reserved.
   */
  async reservedRunIds(db: Queryable): Promise<string[]> {
    if (this.reserved.size === 0) return [];
    const now = Date.now();
    for (const [runId, { revision, since }] of this.reserved)
      if (now - since >= this.limits.maxAgeMs) {
        this.reserved.delete(runId);
        this.logger.warn('run reservation expired before its row caught up with the log', {
          runId,
          revision,
          ageMs: now - since,
        });
      }
    if (this.reserved.size > 0 && now >= this.nextCheck) {
      this.nextCheck = now + this.limits.checkEveryMs;
      const rows = await findRunRevisions(db, [...this.reserved.keys()]);
      for (const [runId, revision] of rows)
        if (revision >= (this.reserved.get(runId)?.revision ?? Infinity)) this.reserved.delete(runId);
    }
    return [...this.reserved.keys()];
  }

  private reserve(appended: ReadonlyMap<string, number>): void {
    const since = Date.now();
    for (const [runId, revision] of appended) {
      this.reserved.delete(runId);
      this.reserved.set(runId, { revision, since });
    }
    let dropped = 0;
    for (const runId of this.reserved.keys()) {
      if (this.reserved.size <= this.limits.maxReserved) break;
      this.reserved.delete(runId);
      dropped++;
    }
    if (dropped > 0) this.logger.warn('run reservations full: the oldest dropped', { dropped });
  }
}
