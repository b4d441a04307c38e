/**
 * What every system in the comparison offers a scenario, so each scenario is
 * written once: start on a fresh database, enqueue in the system's own batch
 * call, run no-op workers, count what is still to do, stop.
 */
export interface BenchPayload {
  /** Sequence number within the scenario. */
  readonly n: number;
  /**
   * When the run is due, ms since the epoch. A leased run of ours does not
   * carry its due time, so every system gets it in the payload.
   */
  readonly dueAt: number;
}

export interface BenchRun {
  readonly payload: BenchPayload;
  /** Absent: due now. */
  readonly runAt?: Date;
}

/** Called as each handler starts, with the handler's own payload; the handler itself does nothing. */
export type OnHandlerStart = (payload: BenchPayload) => void;

export interface QueueSystem {
  /** `chronicle`, `graphile-worker`, `pg-boss` */
  readonly system: string;
  /** `tuned` or `defaults`; ours has one setting. */
  readonly config: string;
  /** The settings in words, for the report. */
  readonly settings: string;
  /** Most runs one enqueue call takes. */
  readonly enqueueBatchSize: number;
  start(databaseUrl: string): Promise<void>;
  /** One call of the system's batch API. */
  enqueue(runs: readonly BenchRun[]): Promise<void>;
  startWorkers(onHandlerStart: OnHandlerStart): Promise<void>;
  /** Runs not yet finished (completed runs committed as such), read from the system's tables. */
  countUnfinished(): Promise<number>;
  /** Stops workers and everything started; safe to call twice and after a failed start. */
  stop(): Promise<void>;
}

/** A fresh, unstarted instance per repetition. */
export interface QueueSystemFactory {
  readonly label: string;
  create(): QueueSystem;
}
