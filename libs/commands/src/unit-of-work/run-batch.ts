import type { PresentRun, RunEvent } from '@chronicle/domain';

export interface RunDecision {
  /** The run as its row was read, under its lock. */
  readonly before: PresentRun;
  readonly after: PresentRun;
  readonly events: readonly RunEvent[];
}

type Metadata = Readonly<Record<string, unknown>>;

/**
 * Runs whose locks the unit of work holds, how to decide each, and the metadata of their events (the
 * same for all, or each run's: a worker's completions name the worker that held each lease).
 */
export interface RunBatch {
  readonly runs: readonly PresentRun[];
  readonly decideOne: (run: PresentRun) => RunEvent[] | null;
  readonly metadata: Metadata | ((run: PresentRun) => Metadata);
}
