import type { MeasuredWindow } from './measured-window';

/**
 * What every system in the comparison offers a scenario, so each scenario is
 * written once: start on a fresh database, enqueue in the system's own batch
 * call, run no-op workers, count what is still to do, stop; and afterwards
 * what its tables say of the run's honesty and cost.
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

/** The scratch databases a system runs on; the runner drops every one of them once the system has stopped. */
export interface ScratchDatabases {
  /** The system's own database. */
  readonly url: string;
  /** Another one on the same server, e.g. for a log of its own; its URL. */
  create(prefix: string): Promise<string>;
}

/** What a scenario counted: the runs it sent, and those whose handler it saw start. */
export interface RunsCounted {
  readonly sent: number;
  readonly started: number;
}

/** What a system's event log holds of a scenario's runs (log-audit.sql.ts). */
export interface LogAudit {
  /** The runs the scenario sent. */
  readonly checked: number;
  /** Runs sent without a RunScheduled, plus runs started without RunLeased and RunSucceeded. */
  readonly missing: number;
  /** Which events are missing, in words. */
  readonly detail: string;
}

/** Called as each handler starts, with the handler's own payload; the handler itself does nothing. */
export type OnHandlerStart = (payload: BenchPayload) => void;

/** A figure a system measures of itself over a window (ours: its server's JSON passes). */
export interface SystemMeter extends MeasuredWindow {
  /** By metric key (runner.ts's COST_METRICS), per run of the window. */
  figuresPerRun(): Record<string, number>;
  end(): Promise<void>;
}

export interface QueueSystem {
  /** `chronicle`, `graphile-worker`, `pg-boss` */
  readonly system: string;
  /** `tuned` or `defaults`; ours has one setting. */
  readonly config: string;
  /** The settings in words, for the report. */
  readonly settings: string;
  /** Most runs one enqueue call takes. */
  readonly enqueueBatchSize: number;
  start(databases: ScratchDatabases): Promise<void>;
  /** Its processes besides the bench's (ours: the server), for the window's CPU split; none when it runs inside the bench. */
  processIds?(): readonly number[];
  /** Meters of its own for the measured window. */
  readonly meters?: readonly SystemMeter[];
  /** One call of the system's batch API. */
  enqueue(runs: readonly BenchRun[]): Promise<void>;
  startWorkers(onHandlerStart: OnHandlerStart): Promise<void>;
  /** Runs not yet finished (completed runs committed as such), read from the system's tables. */
  countUnfinished(): Promise<number>;
  /** Stops workers and everything started; safe to call twice and after a failed start. */
  stop(): Promise<void>;
  /**
   * After stop(), once nobody is connected to its databases: whether its log
   * holds every run the scenario counted. undefined: the system keeps no log.
   */
  auditLog(runs: RunsCounted): Promise<LogAudit | undefined>;
  /**
   * After stop(), likewise (its table statistics are then flushed): the share
   * of the updates of its run table that were HOT, in %. undefined: not
   * measured, or no row was updated.
   */
  hotUpdatePercent(): Promise<number | undefined>;
}

/** A fresh, unstarted instance per repetition. */
export interface QueueSystemFactory {
  readonly label: string;
  create(): QueueSystem;
  /** Only in these scenarios (an opt-in variant, measured where it changes something); absent: in all. */
  readonly scenarios?: readonly string[];
}
