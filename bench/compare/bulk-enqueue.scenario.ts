import { dueNow, enqueueAll, secondsSince, type Scenario } from './scenario';

/** Bulk enqueue: immediate runs through each system's batch call, 1,000 per call, no workers running. */
export const bulkEnqueue: Scenario = {
  name: 'bulk',
  title: 'bulk enqueue',
  metrics: [{ key: 'runsPerSecond', unit: 'runs/s', higherIsBetter: true }],
  async run(system, sizes) {
    const started = process.hrtime.bigint();
    await enqueueAll(system, sizes.bulkRuns, dueNow);
    return { values: { runsPerSecond: sizes.bulkRuns / secondsSince(started) } };
  },
};
