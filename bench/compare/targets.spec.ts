import { CEILING, type Series } from './runner';
import { judgeTargets } from './targets';

/** A series of one repetition with these medians. */
function series(scenario: string, label: string, system: string, values: Record<string, number>): Series {
  return {
    scenario,
    title: scenario,
    metrics: [],
    label,
    system,
    config: '',
    settings: '',
    measurements: [{ values }],
  };
}

const DRAIN = [
  series('drain', 'chronicle', 'chronicle', { completionsPerSecond: 4_000 }),
  series('drain', 'pg-boss tuned', 'pg-boss', { completionsPerSecond: 10_000 }),
  series('drain', 'graphile-worker tuned', 'graphile-worker', { completionsPerSecond: 30_000 }),
];

describe('judgeTargets', () => {
  it("sets the drain's highest bar against the design's floor when the ceiling ran", () => {
    const [drain] = judgeTargets([
      ...DRAIN,
      series(CEILING, 'postgresql', 'postgresql', { designFloorDrainRunsPerSecond: 24_000 }),
    ]);

    // The bars: 0.5 x 30,000 and 0.8 x 10,000; the higher, 15,000, is 63% of 24,000.
    expect(drain).toEqual({
      goal: expect.stringContaining('drain') as string,
      met: false,
      detail: "0.13x graphile-worker tuned, 0.40x pg-boss tuned; the bar is 63% of the design's floor (SQL alone)",
    });
  });

  it('judges the drain by the peers alone when the ceiling did not run', () => {
    const [drain] = judgeTargets(DRAIN);

    expect(drain?.detail).toBe('0.13x graphile-worker tuned, 0.40x pg-boss tuned');
  });

  it('holds the drained run to the cost budget: CPU and WAL per run, fixed bars', () => {
    const judged = judgeTargets([
      series('drain', 'chronicle', 'chronicle', {
        completionsPerSecond: 4_000,
        cpuMicrosecondsPerRun: 300,
        walBytesPerRun: 1_900,
      }),
    ]);
    expect(judged.filter((t) => t.goal.includes('per drained run'))).toEqual([
      {
        goal: 'drain: CPU per drained run, all processes, <= 150 us',
        met: false,
        detail: '2.00x the budget (300 vs 150 us)',
      },
      {
        goal: 'drain: WAL per drained run <= 2,000 bytes',
        met: true,
        detail: '0.95x the budget (1,900 vs 2,000 bytes)',
      },
    ]);
  });
});
