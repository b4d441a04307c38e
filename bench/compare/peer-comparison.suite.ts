import type { BenchServer } from '../bench-database';
import { comparisonCharts, type ChartFile } from '../charts';
import { bulkEnqueue } from './bulk-enqueue.scenario';
import { chronicle, chronicleKeyed, chroniclePrefetch, chronicleRated, chronicleSplit } from './chronicle';
import { drain } from './drain.scenario';
import { graphileWorkerDefaults, graphileWorkerTuned } from './graphile-worker';
import { pgBossDefaults, pgBossTuned } from './pg-boss';
import { listFailures, printTable, toJson } from './report';
import { CEILING, runComparison } from './runner';
import type { Sizes } from './scenario';
import { sustained } from './sustained.scenario';
import { judgeTargets } from './targets';
import { timeliness } from './timeliness.scenario';

export interface SuiteOptions {
  readonly sizes: Sizes;
  /** Scenario names to run; undefined: all. */
  readonly only: ReadonlySet<string> | undefined;
  /** System labels (or a part of one) to run; undefined: all. */
  readonly systems: readonly string[] | undefined;
  readonly progress: (line: string) => void;
  /** --soak=MINUTES: how long the soak runs; undefined: no soak. */
  readonly soakMinutes: number | undefined;
  /** --keep-seed: a suite that seeds a large database keeps it for the next run, and uses a kept one. */
  readonly keepSeed: boolean;
}

/** One suite of `npm run bench`: what it can run, and its report as text and as JSON. */
export interface BenchSuite {
  readonly name: string;
  readonly scenarios: readonly string[];
  run(server: BenchServer, options: SuiteOptions): Promise<SuiteReport>;
}

export interface SuiteReport {
  print(out: NodeJS.WritableStream): void;
  readonly json: unknown;
  /** What failed, in words; the bench exits non-zero when anything did. */
  readonly failures?: readonly string[];
  /** The suite's charts as SVG (`--charts=DIR`); `caption` says which run they come from. */
  charts?(caption: string): readonly ChartFile[];
}

const SCENARIOS = [bulkEnqueue, drain, sustained, timeliness];
const SYSTEMS = [
  chronicle,
  chronicleSplit,
  chroniclePrefetch,
  chronicleKeyed,
  chronicleRated,
  graphileWorkerTuned,
  graphileWorkerDefaults,
  pgBossTuned,
  pgBossDefaults,
];

/** `=label` picks that system alone (`=chronicle`: the log inline only); a bare name, every label containing it. */
function labelMatches(label: string, name: string): boolean {
  return name.startsWith('=') ? label === name.slice(1) : label.includes(name);
}

/** Our product against pg-boss and graphile-worker, tuned and at their defaults, on one server. */
export const peerComparison: BenchSuite = {
  name: 'peers',
  scenarios: [...SCENARIOS.map((s) => s.name), CEILING],
  async run(server, options) {
    const { sizes, only } = options;
    const systems = SYSTEMS.filter(
      (f) => options.systems === undefined || options.systems.some((name) => labelMatches(f.label, name)),
    );
    const series = await runComparison({
      server,
      scenarios: SCENARIOS.filter((s) => only === undefined || only.has(s.name)),
      systems,
      withCeiling: only === undefined || only.has(CEILING),
      sizes,
      progress: options.progress,
    });
    const targets = judgeTargets(series);
    const header = [
      `queue comparison on ${server.description}; Node ${process.version} (the bench, its workers and our server)`,
      `${sizes.repetitions} repetition(s), each system on a fresh database per scenario, systems alternating; medians with min–max`,
      `ours/this > 1 is ours ahead for throughputs, behind for latencies (ms)`,
      '',
      ...systems.map((f) => `${f.label}: ${f.create().settings}`),
    ];
    const json = toJson(server.description, sizes, series, targets);
    return {
      print: (out) => printTable(out, header, series, targets),
      json,
      failures: listFailures(series),
      charts: (caption) => comparisonCharts(json, caption),
    };
  },
};
