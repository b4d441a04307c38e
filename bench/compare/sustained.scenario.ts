import { produceUntil } from './producer';
import { percentile, type Scenario } from './scenario';

/**
 * Sustained lifecycle: one producer enqueues batches of 100 back to back
 * while the workers run, for a fixed time; completions/s and the delay from
 * a run's due time (when its batch was sent) to its handler's start.
 */
export const sustained: Scenario = {
  name: 'sustained',
  title: 'sustained lifecycle',
  metrics: [
    { key: 'completionsPerSecond', unit: 'completions/s', higherIsBetter: true },
    { key: 'p50Ms', unit: 'ms start delay p50', higherIsBetter: false },
    { key: 'p99Ms', unit: 'ms start delay p99', higherIsBetter: false },
  ],
  async run(system, sizes, window) {
    const delays: number[] = [];
    let started = 0;
    await window.open();
    const startedAt = Date.now();
    const endAt = startedAt + sizes.sustainedSeconds * 1000;
    await system.startWorkers((payload) => {
      started++;
      const now = Date.now();
      if (now < endAt) delays.push(now - payload.dueAt);
    });
    const sent = await produceUntil(system, endAt, () => started);
    const seconds = (Date.now() - startedAt) / 1000;
    await window.close(delays.length);
    return {
      values: {
        completionsPerSecond: delays.length / seconds,
        p50Ms: percentile(delays, 50),
        p99Ms: percentile(delays, 99),
      },
      runs: { sent, started },
    };
  },
};
