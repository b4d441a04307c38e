import type { Pool } from 'pg';
import type { RunEvent, PresentRun } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import type { Queryable } from '@chronicle/platform';
import { decideAndAppendRuns, type RunDecision } from './decide-runs';
import type { RunLog } from './run-log';
import type { RunReservations } from './run-reservations';

export interface LockedRuns<Context> {
  /** The runs whose locks the transaction took, as they are now, with the database's clock. */
  readonly runs: readonly PresentRun[];
  readonly now: Date;
  /** What the decision needs to know of each run beyond its state (why it was picked). */
  readonly context: Context;
}

/** Where a pass's decisions go: the log, the read models, and this process's reservations and log lines. */
export interface RunPassServices {
  readonly pool: Pool;
  readonly store: EventStore;
  readonly reservations: RunReservations;
  readonly runLog: RunLog;
}

/** One of the scheduler's passes over runs, as decideLockedRunsInBatches runs it. */
export interface RunPass<Context> {
  /** Runs per unit of work at most. */
  readonly batch: number;
  /** Locks and reads up to `limit` runs, leaving out `reserved`; null when there is nothing to do. */
  readonly lockAndLoad: (
    tx: Queryable,
    limit: number,
    reserved: readonly string[],
  ) => Promise<LockedRuns<Context> | null>;
  /** The run's events, or null to leave it as it is. */
  readonly decideOne: (run: PresentRun, now: Date, context: Context) => RunEvent[] | null;
  /** Who decides, as the events' metadata names it (`scheduler:lease-reaper`). */
  readonly actor: string;
  readonly schemaVersion: number;
  /** Told of each batch's decisions once it committed (to count them). */
  readonly onCommitted?: (decisions: readonly RunDecision[]) => void;
}

/**
 * The scheduler's passes over runs (the lease reaper, the overlap policy):
 * in batches of up to `batch`, each one unit of work that locks and reads
 * its runs, decides each, and appends and writes them through together; a
 * full batch is followed at once by the next. Resolves with the runs decided.
 * `lockAndLoad` leaves out the runs reserved (their rows lag what this
 * process appended), and a batch whose rows then fail to commit reserves its
 * own. Each batch's runs are logged once it committed (RunLog), and `onCommitted` is told its decisions.
 */
export async function decideLockedRunsInBatches<Context>(
  { pool, store, reservations, runLog }: RunPassServices,
  { batch, lockAndLoad, decideOne, actor, schemaVersion, onCommitted }: RunPass<Context>,
): Promise<number> {
  let decided = 0;
  while (true) {
    const reserved = await reservations.reservedRunIds(pool);
    const metadata = { actor, schemaVersion };
    const decisions = await reservations.unitOfWork(store, pool, async (uow) => {
      const locked = await lockAndLoad(uow.tx, batch, reserved);
      if (locked === null) return [];
      const { runs, now, context } = locked;
      return decideAndAppendRuns(uow, runs, (run) => decideOne(run, now, context), metadata);
    });
    runLog.decided(decisions, metadata);
    onCommitted?.(decisions);
    decided += decisions.length;
    if (decisions.length < batch) return decided;
  }
}
