import { dueNow, enqueueAll, secondsSince, type Scenario } from './scenario';

/** Bulk enqueue: immediate runs through each system's batch call, 1,000 per call, no workers running. */
export const bulkEnqueue: Scenario = {
  name: 'bulk',
  title: 'bulk enqueue',
  metrics: [{ key: 'runsPerSecond', unit: 'runs/s', higherIsBetter: true }],
  async run(system, sizes, window) {
    await window.open();
    const started = process.hrtime.bigint();
    await enqueueAll(system, sizes.bulkRuns, dueNow);
    const seconds = secondsSince(started);
    await window.close(sizes.bulkRuns);
    return { values: { runsPerSecond: sizes.bulkRuns / seconds }, runs: { sent: sizes.bulkRuns, started: 0 } };
  },
};
