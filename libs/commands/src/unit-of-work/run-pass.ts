import type { RunEvent, PresentRun } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import type { RunDecision } from './run-batch';

export interface LockedRuns<Context> {
  /** The runs whose locks the transaction took, as they are now, with the database's clock. */
  readonly runs: readonly PresentRun[];
  readonly now: Date;
  /** What the decision needs to know of each run beyond its state (why it was picked). */
  readonly context: Context;
}

/** One of the scheduler's passes over runs, as RunDecisions.pass runs it. */
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
