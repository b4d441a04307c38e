import type { WorkerLogger } from '@chronicle/worker-sdk';

/** A logger for SDK workers in tests: what they log is not what the tests check. */
export const QUIET_WORKER_LOGGER: WorkerLogger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
