import { chronicle } from './chronicle';
import { CEILING, type Series } from './runner';
import type { Measurement, Metric, Sizes } from './scenario';

/** Our system, inline or with its log split off. */
export const OURS = 'chronicle';
/** What the table's ours/this compares against: ours as deployed by default, the log inline. */
const OURS_INLINE = chronicle.label;

/** The PostgreSQL ceiling each throughput is set against (see bench/README.md, "Reading the table"). */
const CEILING_OF: Readonly<Record<string, { metric: string; ceiling: string }>> = {
  // Enqueueing is batched inserts; a completion is at least one commit.
  bulk: { metric: 'runsPerSecond', ceiling: 'batchRowsPerSecond' },
  drain: { metric: 'completionsPerSecond', ceiling: 'singleRowCommitsPerSecond' },
  sustained: { metric: 'completionsPerSecond', ceiling: 'singleRowCommitsPerSecond' },
};

/** A share, as the tables print it: 0.584 -> "58%". */
export function percent(share: number): string {
  return `${(100 * share).toFixed(0)}%`;
}

/** A target of the bench, judged (targets.ts; bench/README.md, "Reading the table"). */
export interface Target {
  readonly goal: string;
  readonly met: boolean;
  readonly detail: string;
}

export interface Summary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: number;
}

/**
 * Median, min and max of one metric over the repetitions that produced it;
 * a failed repetition's figures do not count, but for a check's own.
 */
export function summarise(series: Series, metric: Metric): Summary | undefined {
  const values = series.measurements
    .filter((m) => m.failed !== true || metric.check === true)
    .map((m) => m.values[metric.key])
    .filter((v): v is number => v !== undefined && Number.isFinite(v));
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return {
    median: sorted[Math.floor(sorted.length / 2)]!,
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    runs: values.length,
  };
}

/** Each failed repetition, in words: the bench exits non-zero when there is one. */
export function listFailures(all: readonly Series[]): string[] {
  return all.flatMap((s) =>
    s.measurements.flatMap((m, i) =>
      m.failed === true ? [`${s.scenario} ${s.label}, run ${i + 1}: ${(m.note ?? '').replace(/^failed: /, '')}`] : [],
    ),
  );
}

/**
 * The table: per scenario and metric, each system's median with min–max, ours/that system, and the
 * share of the PostgreSQL ceiling; then the targets and what failed.
 */
export function printTable(
  out: NodeJS.WritableStream,
  header: readonly string[],
  all: readonly Series[],
  targets: readonly Target[],
): void {
  const ceiling = all.find((s) => s.scenario === CEILING);
  const ceilingOf = (scenario: string, metric: Metric): number | undefined => {
    const pair = CEILING_OF[scenario];
    const found = pair?.metric !== metric.key ? undefined : ceiling?.metrics.find((m) => m.key === pair.ceiling);
    return found === undefined ? undefined : summarise(ceiling!, found)?.median;
  };
  const rows: string[][] = [
    ['scenario', 'metric', 'system', 'median', 'min–max', 'ours/this', 'of PG ceiling', 'note'],
  ];
  const scenarios = [...new Set(all.map((s) => s.scenario))];
  for (const scenario of scenarios) {
    const group = all.filter((s) => s.scenario === scenario);
    // The scenario's metrics, then the cost and check figures some system of it reported.
    const metrics = [...new Map(group.flatMap((s) => s.metrics).map((m) => [m.key, m])).values()];
    for (const metric of metrics) {
      const ours = group.find((s) => s.label === OURS_INLINE);
      const oursMedian = ours === undefined ? undefined : summarise(ours, metric)?.median;
      const top = ceilingOf(scenario, metric);
      for (const series of group.filter((s) => s.metrics.includes(metric))) {
        const summary = summarise(series, metric);
        const notes = [...new Set(series.measurements.flatMap((m) => (m.note === undefined ? [] : [m.note])))].join(
          '; ',
        );
        const comparable =
          summary !== undefined && oursMedian !== undefined && series !== ours && metric.check !== true;
        rows.push([
          series.title,
          metric.unit,
          series.label,
          summary === undefined ? 'n/a' : fmt(summary.median),
          summary === undefined ? '' : `${fmt(summary.min)}–${fmt(summary.max)}`,
          comparable && summary.median !== 0 ? `${(oursMedian / summary.median).toFixed(2)}x` : '',
          summary === undefined || top === undefined ? '' : percent(summary.median / top),
          notes,
        ]);
      }
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const numeric = new Set([3, 4, 5, 6]);
  out.write(header.join('\n') + '\n\n');
  for (const [i, row] of rows.entries()) {
    out.write(
      row
        .map((cell, c) => (numeric.has(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
        .join('  ')
        .trimEnd() + '\n',
    );
    if (i === 0) out.write(widths.map((w) => '-'.repeat(w)).join('  ') + '\n');
  }
  if (targets.length > 0) {
    out.write('\ntargets (medians)\n');
    for (const target of targets)
      out.write(`  ${target.met ? 'met    ' : 'NOT met'}  ${target.goal}: ${target.detail}\n`);
  }
  const failures = listFailures(all);
  if (failures.length > 0) {
    out.write('\nFAILED (left out of the medians and the targets)\n');
    for (const failure of failures) out.write(`  ${failure}\n`);
  }
}

/** One metric of one system in one scenario, as `--json` gives it: no median when every repetition failed. */
export interface MetricJson extends Partial<Summary> {
  readonly unit: string;
  readonly higherIsBetter: boolean;
}

/** The peer comparison's figures as `--json` prints them (and as bench/charts.ts draws them). */
export interface ComparisonJson {
  readonly server: string;
  readonly sizes: Sizes;
  readonly systems: ReadonlyArray<Pick<Series, 'label' | 'system' | 'config' | 'settings'>>;
  readonly results: ReadonlyArray<{
    readonly scenario: string;
    /** The system's label: `chronicle`, `pg-boss tuned`, ... */
    readonly system: string;
    readonly metrics: Readonly<Record<string, MetricJson>>;
    readonly runs: readonly Measurement[];
  }>;
  readonly targets: readonly Target[];
  readonly failures: readonly string[];
}

export function toJson(
  server: string,
  sizes: Sizes,
  all: readonly Series[],
  targets: readonly Target[],
): ComparisonJson {
  return {
    server,
    sizes,
    systems: [
      ...new Map(
        all.map((s) => [s.label, { label: s.label, system: s.system, config: s.config, settings: s.settings }]),
      ).values(),
    ],
    results: all.map((s) => ({
      scenario: s.scenario,
      system: s.label,
      metrics: Object.fromEntries(
        s.metrics.map((m) => [m.key, { unit: m.unit, higherIsBetter: m.higherIsBetter, ...summarise(s, m) }]),
      ),
      runs: s.measurements,
    })),
    targets,
    failures: listFailures(all),
  };
}

/** Whole numbers with separators; a figure under 100 that is not whole keeps a digit or two (0.06 statements a run). */
function fmt(n: number): string {
  if (Number.isInteger(n) || Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return n.toFixed(Math.abs(n) < 10 ? 2 : 1);
}
