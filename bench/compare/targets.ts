import { chronicle, chronicleKeyed, chroniclePrefetch, chronicleRated, chronicleSplit } from './chronicle';
import { graphileWorkerTuned } from './graphile-worker';
import { pgBossTuned } from './pg-boss';
import { OURS, percent, summarise, type Target } from './report';
import { CEILING, type Series } from './runner';

/** The goal for timeliness with the opt-in prefetch. */
const PREFETCH_P99_GOAL_MS = 50;
/** The cost budget per drained run on this machine's kind (2 cores, peers in the same run). */
const CPU_BUDGET_US = 150;
const WAL_BUDGET_BYTES = 2_000;

/** One series' median of one metric. */
interface Figure {
  readonly label: string;
  readonly value: number;
}

/** A bar ours is held to: `factor` times another system's figure, at least (throughputs) or at most (ms). */
interface Bar {
  readonly of: Figure | undefined;
  readonly factor: number;
}

/**
 * The targets (bench/README.md, "Reading the table"), each judged on the
 * run's medians (a failed repetition has none: speed the log does not back
 * never counts). A goal whose figures were not all measured (a scenario or
 * system left out) has no verdict and is not listed.
 */
export function judgeTargets(all: readonly Series[]): Target[] {
  const figure = (scenario: string, label: string, key: string): Figure | undefined => {
    const series = all.find((s) => s.scenario === scenario && s.label === label);
    const summary = series === undefined ? undefined : summarise(series, { key, unit: '', higherIsBetter: true });
    return summary === undefined ? undefined : { label, value: summary.median };
  };
  // The faster peer by this latency: the lowest median among the peers that ran.
  const fasterPeer = (scenario: string, key: string): Figure | undefined =>
    all
      .filter((s) => s.scenario === scenario && s.system !== OURS)
      .flatMap((s) => figure(scenario, s.label, key) ?? [])
      .sort((a, b) => a.value - b.value)[0];
  const ours = (scenario: string, key: string) => figure(scenario, chronicle.label, key);
  const pgBoss = (scenario: string, key: string) => figure(scenario, pgBossTuned.label, key);
  const graphile = (scenario: string, key: string) => figure(scenario, graphileWorkerTuned.label, key);
  // What the design's own writes allow with PostgreSQL alone on the machine (ceiling.ts), when the ceiling ran.
  const designFloor = (key: string): Figure | undefined => {
    const found = figure(CEILING, 'postgresql', key);
    return found === undefined ? undefined : { label: "the design's floor (SQL alone)", value: found.value };
  };
  const targets = [
    atLeast(
      `drain: ours >= 0.5x ${graphileWorkerTuned.label} and >= 0.8x ${pgBossTuned.label}`,
      ours('drain', 'completionsPerSecond'),
      [
        { of: graphile('drain', 'completionsPerSecond'), factor: 0.5 },
        { of: pgBoss('drain', 'completionsPerSecond'), factor: 0.8 },
      ],
      designFloor('designFloorDrainRunsPerSecond'),
    ),
    atLeast(`sustained: ours >= 0.5x ${graphileWorkerTuned.label}`, ours('sustained', 'completionsPerSecond'), [
      { of: graphile('sustained', 'completionsPerSecond'), factor: 0.5 },
    ]),
    atMost("sustained: start delay p99 <= 2x the faster peer's", ours('sustained', 'p99Ms'), {
      of: fasterPeer('sustained', 'p99Ms'),
      factor: 2,
    }),
    atLeast(
      `bulk enqueue: ours >= 0.5x ${graphileWorkerTuned.label} and >= 0.5x ${pgBossTuned.label}`,
      ours('bulk', 'runsPerSecond'),
      [
        { of: graphile('bulk', 'runsPerSecond'), factor: 0.5 },
        { of: pgBoss('bulk', 'runsPerSecond'), factor: 0.5 },
      ],
      designFloor('designFloorEnqueueRunsPerSecond'),
    ),
    atMost("timeliness: p99 <= 1.5x the faster peer's", ours('timeliness', 'p99Ms'), {
      of: fasterPeer('timeliness', 'p99Ms'),
      factor: 1.5,
    }),
    // docs/architecture.md, "The cost budget per run": fixed bars rather than a peer's figure.
    atMost(
      'drain: CPU per drained run, all processes, <= 150 us',
      ours('drain', 'cpuMicrosecondsPerRun'),
      { of: { label: 'the budget', value: CPU_BUDGET_US }, factor: 1 },
      'us',
    ),
    atMost(
      'drain: WAL per drained run <= 2,000 bytes',
      ours('drain', 'walBytesPerRun'),
      { of: { label: 'the budget', value: WAL_BUDGET_BYTES }, factor: 1 },
      'bytes',
    ),
    // The goal for the opt-in prefetch, a fixed bar rather than a peer's figure.
    atMost('timeliness with prefetch (opt-in): p99 <= 50 ms', figure('timeliness', chroniclePrefetch.label, 'p99Ms'), {
      of: { label: 'the 50 ms goal', value: PREFETCH_P99_GOAL_MS },
      factor: 1,
    }),
    atLeast(
      'drain: 1,000 concurrency keys at perKeyConcurrency 1 >= 0.8x the plain drain',
      figure('drain', chronicleKeyed.label, 'completionsPerSecond'),
      [{ of: ours('drain', 'completionsPerSecond'), factor: 0.8 }],
    ),
    atLeast(
      'drain: a rate limit above the achievable rate >= 0.8x the plain drain',
      figure('drain', chronicleRated.label, 'completionsPerSecond'),
      [{ of: ours('drain', 'completionsPerSecond'), factor: 0.8 }],
    ),
    atLeast('drain: split log >= 0.5x inline', figure('drain', chronicleSplit.label, 'completionsPerSecond'), [
      { of: ours('drain', 'completionsPerSecond'), factor: 0.5 },
    ]),
  ];
  return targets.filter((t): t is Target => t !== undefined);
}

/**
 * A throughput: `figure` at least each bar's factor times its system's. With a `floor` (what the
 * design's writes allow at best), the detail says how much of it the highest bar asks for.
 */
function atLeast(goal: string, figure: Figure | undefined, bars: readonly Bar[], floor?: Figure): Target | undefined {
  if (figure === undefined || bars.some((bar) => bar.of === undefined)) return undefined;
  const ratios = bars.map((bar) => ({ bar, ratio: figure.value / bar.of!.value }));
  const highest = Math.max(...bars.map((bar) => bar.factor * bar.of!.value));
  const share = floor === undefined ? '' : `; the bar is ${percent(highest / floor.value)} of ${floor.label}`;
  return {
    goal,
    met: ratios.every(({ bar, ratio }) => ratio >= bar.factor),
    detail: ratios.map(({ bar, ratio }) => `${ratio.toFixed(2)}x ${bar.of!.label}`).join(', ') + share,
  };
}

/** A latency in ms (or a cost in `unit`): `figure` at most the bar's factor times its system's. */
function atMost(goal: string, figure: Figure | undefined, bar: Bar, unit = 'ms'): Target | undefined {
  if (figure === undefined || bar.of === undefined) return undefined;
  const ratio = figure.value / bar.of.value;
  return {
    goal,
    met: ratio <= bar.factor,
    detail: `${ratio.toFixed(2)}x ${bar.of.label} (${whole(figure.value)} vs ${whole(bar.of.value)} ${unit})`,
  };
}

function whole(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
