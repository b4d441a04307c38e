import { enqueueAll, percentile, sleep, waitUntil, type Scenario } from './scenario';

/** Workers get this long to settle into their idle wait before the runs go in. */
const SETTLE_MS = 1_000;
/** Past this a run counts as this late: a peer at its defaults could take an hour over 2,000 runs. */
const LATE_CAP_MS = 10_000;

/**
 * Timeliness: runs all due at one instant a few seconds ahead, idle workers
 * waiting; how late after that instant each handler starts. No throughput,
 * so no measured window: its WAL would be mostly the idle wait's.
 */
export const timeliness: Scenario = {
  name: 'timeliness',
  title: 'timeliness',
  metrics: [
    { key: 'p50Ms', unit: 'ms late p50', higherIsBetter: false },
    { key: 'p95Ms', unit: 'ms late p95', higherIsBetter: false },
    { key: 'p99Ms', unit: 'ms late p99', higherIsBetter: false },
    { key: 'maxMs', unit: 'ms late max', higherIsBetter: false },
  ],
  async run(system, sizes) {
    const lateness: number[] = [];
    await system.startWorkers((payload) => void lateness.push(Date.now() - payload.dueAt));
    await sleep(SETTLE_MS);
    const dueAt = new Date(Date.now() + sizes.timelinessLeadSeconds * 1000);
    await enqueueAll(system, sizes.timelinessRuns, (n) => ({ payload: { n, dueAt: dueAt.getTime() }, runAt: dueAt }));
    if (Date.now() > dueAt.getTime())
      throw new Error(`enqueueing ${sizes.timelinessRuns} runs took past their due time; raise the lead`);
    await waitUntil(() => lateness.length >= sizes.timelinessRuns, dueAt.getTime() + LATE_CAP_MS);
    const missing = sizes.timelinessRuns - lateness.length;
    // A run not started by the cap counts as late as the cap: it is at least that late.
    const all = [...lateness, ...Array.from({ length: Math.max(0, missing) }, () => LATE_CAP_MS)];
    return {
      values: {
        p50Ms: percentile(all, 50),
        p95Ms: percentile(all, 95),
        p99Ms: percentile(all, 99),
        maxMs: Math.max(...all),
      },
      runs: { sent: sizes.timelinessRuns, started: lateness.length },
      ...(missing > 0
        ? { note: `${missing} of ${sizes.timelinessRuns} not started ${LATE_CAP_MS / 1000} s after their due time` }
        : {}),
    };
  },
};
