import type { BenchRun } from './queue-system';
import { percentile, sleep, type Scenario } from './scenario';

const BATCH = 100;
/**
 * The producer stops adding while this many runs wait: the system is kept
 * saturated, yet the start delay measures the system, not an ever-growing queue.
 */
const MAX_BACKLOG = 1_000;

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
  async run(system, sizes) {
    const delays: number[] = [];
    let enqueued = 0;
    const startedAt = Date.now();
    const endAt = startedAt + sizes.sustainedSeconds * 1000;
    await system.startWorkers((payload) => {
      const now = Date.now();
      if (now < endAt) delays.push(now - payload.dueAt);
    });
    while (Date.now() < endAt) {
      if (enqueued - delays.length >= MAX_BACKLOG) {
        await sleep(2);
        continue;
      }
      const dueAt = Date.now();
      await system.enqueue(
        Array.from({ length: BATCH }, (_, i): BenchRun => ({ payload: { n: enqueued + i, dueAt } })),
      );
      enqueued += BATCH;
    }
    const seconds = (Date.now() - startedAt) / 1000;
    return {
      values: {
        completionsPerSecond: delays.length / seconds,
        p50Ms: percentile(delays, 50),
        p99Ms: percentile(delays, 99),
      },
    };
  },
};
