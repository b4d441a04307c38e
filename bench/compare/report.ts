import { CEILING, type Series } from './runner';
import type { Metric, Sizes } from './scenario';

const OURS = 'chronicle';

export interface Summary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: number;
}

export interface Target {
  readonly goal: string;
  readonly met: boolean;
  readonly detail: string;
}

/** Median, min and max of one metric over the repetitions that produced it. */
export function summarise(series: Series, metric: Metric): Summary | undefined {
  const values = series.measurements
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

/** The goals of issue 6, judged on medians; a scenario that did not run has no verdict. */
export function judgeTargets(all: readonly Series[]): Target[] {
  const median = (
    scenario: string,
    key: string,
    pick: (s: Series) => boolean,
  ): Array<{ label: string; value: number }> =>
    all
      .filter((s) => s.scenario === scenario && pick(s))
      .flatMap((s) => {
        const summary = summarise(s, { key, unit: '', higherIsBetter: true });
        return summary === undefined ? [] : [{ label: s.label, value: summary.median }];
      });
  const ours = (scenario: string, key: string) => median(scenario, key, (s) => s.system === OURS)[0];
  const targets: Target[] = [];
  for (const scenario of ['drain', 'sustained']) {
    const us = ours(scenario, 'completionsPerSecond');
    const fastest = median(scenario, 'completionsPerSecond', (s) => s.system !== OURS).sort(
      (a, b) => b.value - a.value,
    )[0];
    if (us === undefined || fastest === undefined) continue;
    const ratio = us.value / fastest.value;
    targets.push({
      goal: `${scenario}: ours >= 1.0x the faster peer`,
      met: ratio >= 1,
      detail: `${ratio.toFixed(2)}x ${fastest.label}`,
    });
  }
  const p99 = ours('timeliness', 'p99Ms');
  if (p99 !== undefined)
    targets.push({ goal: 'timeliness: p99 < 100 ms', met: p99.value < 100, detail: `p99 ${fmt(p99.value)} ms` });
  const bulk = ours('bulk', 'runsPerSecond');
  const graphile = median('bulk', 'runsPerSecond', (s) => s.system === 'graphile-worker').sort(
    (a, b) => b.value - a.value,
  )[0];
  if (bulk !== undefined && graphile !== undefined) {
    const ratio = bulk.value / graphile.value;
    targets.push({
      goal: 'bulk: ours >= 0.5x graphile-worker',
      met: ratio >= 0.5,
      detail: `${ratio.toFixed(2)}x ${graphile.label}`,
    });
  }
  return targets;
}

/**
 * The table: per scenario and metric, each system's median with min–max, ours/that system, and the
 * share of the PostgreSQL ceiling.
 */
export function printTable(
  out: NodeJS.WritableStream,
  header: readonly string[],
  all: readonly Series[],
  targets: readonly Target[],
): void {
  const ceiling = all.find((s) => s.scenario === CEILING);
  const ceilingOf = (scenario: string, metric: Metric): number | undefined => {
    if (ceiling === undefined || !metric.higherIsBetter) return undefined;
    // Enqueueing is batched inserts; a completion is at least one commit.
    const key =
      scenario === 'bulk'
        ? 'batchRowsPerSecond'
        : scenario === 'drain' || scenario === 'sustained'
          ? 'singleRowCommitsPerSecond'
          : undefined;
    const found = key === undefined ? undefined : ceiling.metrics.find((m) => m.key === key);
    return found === undefined ? undefined : summarise(ceiling, found)?.median;
  };
  const rows: string[][] = [
    ['scenario', 'metric', 'system', 'median', 'min–max', 'ours/this', 'of PG ceiling', 'note'],
  ];
  const scenarios = [...new Set(all.map((s) => s.scenario))];
  for (const scenario of scenarios) {
    const group = all.filter((s) => s.scenario === scenario);
    for (const metric of group[0]!.metrics) {
      const ours = group.find((s) => s.system === OURS);
      const oursMedian = ours === undefined ? undefined : summarise(ours, metric)?.median;
      const top = ceilingOf(scenario, metric);
      for (const series of group) {
        const summary = summarise(series, metric);
        const notes = [...new Set(series.measurements.flatMap((m) => (m.note === undefined ? [] : [m.note])))].join(
          '; ',
        );
        rows.push([
          series.title,
          metric.unit,
          series.label,
          summary === undefined ? 'n/a' : fmt(summary.median),
          summary === undefined ? '' : `${fmt(summary.min)}–${fmt(summary.max)}`,
          summary === undefined || oursMedian === undefined || series.system === OURS
            ? ''
            : `${(oursMedian / summary.median).toFixed(2)}x`,
          summary === undefined || top === undefined ? '' : `${((100 * summary.median) / top).toFixed(0)}%`,
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
    out.write('\ntargets\n');
    for (const target of targets)
      out.write(`  ${target.met ? 'met    ' : 'NOT met'}  ${target.goal}: ${target.detail}\n`);
  }
}

export function toJson(server: string, sizes: Sizes, all: readonly Series[], targets: readonly Target[]): unknown {
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
  };
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
