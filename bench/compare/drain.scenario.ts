import { dueNow, enqueueAll, secondsSince, waitUntil, type Scenario } from './scenario';

/**
 * Drain: the runs are all ready before the workers start; the clock runs from
 * starting the workers until the system's own tables say none is left, so a
 * batched completion counts only once it is committed.
 */
export const drain: Scenario = {
  name: 'drain',
  title: 'drain',
  metrics: [{ key: 'completionsPerSecond', unit: 'completions/s', higherIsBetter: true }],
  async run(system, sizes, window) {
    await enqueueAll(system, sizes.drainRuns, dueNow);
    let handled = 0;
    await window.open();
    const started = process.hrtime.bigint();
    const deadline = Date.now() + sizes.drainCapSeconds * 1000;
    await system.startWorkers(() => void handled++);
    await waitUntil(() => handled >= sizes.drainRuns, deadline, 10);
    let unfinished = sizes.drainRuns;
    await waitUntil(async () => (unfinished = await system.countUnfinished()) === 0, deadline);
    const seconds = secondsSince(started);
    const completed = sizes.drainRuns - unfinished;
    await window.close(completed);
    return {
      values: { completionsPerSecond: completed / seconds },
      runs: { sent: sizes.drainRuns, started: handled },
      ...(unfinished > 0
        ? { note: `capped at ${sizes.drainCapSeconds} s with ${unfinished} of ${sizes.drainRuns} left` }
        : {}),
    };
  },
};
