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

    // The bars: 1.2 x 10,000 and 0.6 x 30,000; the higher, 18,000, is 75% of 24,000.
    expect(drain).toEqual({
      goal: expect.stringContaining('drain') as string,
      met: false,
      detail: "0.40x pg-boss tuned, 0.13x graphile-worker tuned; the bar is 75% of the design's floor (SQL alone)",
    });
  });

  it('judges the drain by the peers alone when the ceiling did not run', () => {
    const [drain] = judgeTargets(DRAIN);

    expect(drain?.detail).toBe('0.40x pg-boss tuned, 0.13x graphile-worker tuned');
  });
});
