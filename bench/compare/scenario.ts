import type { StatementCost } from './statement-meter';
import type { WalBreakdown } from './wal-meter';
import type { MeasuredWindow } from './measured-window';
import type { BenchPayload, BenchRun, QueueSystem, RunsCounted } from './queue-system';

/** How big each scenario is: the full run, or `--quick` for a smoke run. */
export interface Sizes {
  readonly repetitions: number;
  readonly bulkRuns: number;
  readonly drainRuns: number;
  /** A drain that has not emptied the queue by then reports what it finished (a peer at its defaults may not). */
  readonly drainCapSeconds: number;
  readonly sustainedSeconds: number;
  readonly timelinessRuns: number;
  readonly timelinessLeadSeconds: number;
  readonly ceilingSeconds: number;
}

export const FULL: Sizes = {
  repetitions: 3,
  bulkRuns: 20_000,
  drainRuns: 20_000,
  drainCapSeconds: 30,
  sustainedSeconds: 20,
  timelinessRuns: 2_000,
  timelinessLeadSeconds: 5,
  ceilingSeconds: 5,
};
export const QUICK: Sizes = {
  repetitions: 1,
  bulkRuns: 2_000,
  drainRuns: 2_000,
  drainCapSeconds: 10,
  sustainedSeconds: 5,
  timelinessRuns: 500,
  timelinessLeadSeconds: 3,
  ceilingSeconds: 2,
};

export interface Metric {
  readonly key: string;
  readonly unit: string;
  /** Throughputs are; latencies are not. */
  readonly higherIsBetter: boolean;
  /** A check's own figure (runs missing from the log): summarised from failed repetitions too. */
  readonly check?: boolean;
}

/** One repetition's figures, by metric key; `note` says what was unusual (a capped drain). */
export interface Measurement {
  readonly values: Readonly<Record<string, number>>;
  readonly note?: string;
  /** The runs the scenario sent and saw start, which the system's log must hold (log-audit.sql.ts). */
  readonly runs?: RunsCounted;
  /** Its figures must not count (an error, a log without the runs): kept in the JSON, left out of the medians. */
  readonly failed?: boolean;
  /** The statements that took most of PostgreSQL's time in the window, per run (in the JSON only). */
  readonly topStatements?: StatementCost['top'];
  /** The WAL record kinds that wrote most of the window's WAL, per run (in the JSON only). */
  readonly topWalRecords?: WalBreakdown['top'];
  /** The tables and indexes that wrote most of the window's WAL, per run, with their record kinds (in the JSON only). */
  readonly walByRelation?: WalBreakdown['byRelation'];
}

export type { MeasuredWindow } from './measured-window';

export interface Scenario {
  readonly name: string;
  readonly title: string;
  readonly metrics: readonly Metric[];
  /**
   * The system is started on a fresh database and stopped afterwards by the
   * runner. A scenario with a throughput marks its measured window.
   */
  run(system: QueueSystem, sizes: Sizes, window: MeasuredWindow): Promise<Measurement>;
}

/** Enqueues `runs` one batch call after another (a single producer), in the system's batch size. */
export async function enqueueAll(system: QueueSystem, count: number, makeRun: (n: number) => BenchRun): Promise<void> {
  for (let from = 0; from < count; from += system.enqueueBatchSize) {
    const size = Math.min(system.enqueueBatchSize, count - from);
    await system.enqueue(Array.from({ length: size }, (_, i) => makeRun(from + i)));
  }
}

export function dueNow(n: number): BenchRun {
  const payload: BenchPayload = { n, dueAt: Date.now() };
  return { payload };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `condition` every `everyMs` until it holds (true) or `deadline` passes (false). */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  deadline: number,
  everyMs = 20,
): Promise<boolean> {
  while (!(await condition())) {
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
  return true;
}

/** Nearest-rank percentile of unsorted values, `p` in [0, 100]. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function secondsSince(startedNs: bigint): number {
  return Number(process.hrtime.bigint() - startedNs) / 1e9;
}
