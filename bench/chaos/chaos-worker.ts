import { appendFileSync } from 'node:fs';
import { SchedulerClient, Worker } from '@chronicle/worker-sdk';

/**
 * A team's worker in the chaos run: the SDK's Worker, handlers that take 10-500 ms and fail 5% of
 * the time. Before a handler starts it writes the run and its fencing token to EXECUTIONS_FILE
 * (synchronously, so a SIGKILL cannot hide an execution that began), for the reconciliation.
 *
 *   SCHEDULER_URL, SCHEDULER_TOKEN, QUEUE, EXECUTIONS_FILE; LEASE_SECONDS (default 5)
 */
const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`chaos worker: ${name} is not set`);
  return value;
};
const FAIL_RATE = 0.05;
const executions = env('EXECUTIONS_FILE');

const worker = new Worker({
  client: new SchedulerClient({ baseUrl: env('SCHEDULER_URL'), token: env('SCHEDULER_TOKEN') }),
  queues: [env('QUEUE')],
  concurrency: 8,
  leaseSeconds: Number(process.env['LEASE_SECONDS'] ?? 5),
  waitSeconds: 5,
  workerId: `chaos-worker-${process.pid}`,
  logger: {
    info: () => undefined,
    warn: (message, fields) => process.stderr.write(`${JSON.stringify({ level: 'warn', message, ...fields })}\n`),
    error: (message, fields) => process.stderr.write(`${JSON.stringify({ level: 'error', message, ...fields })}\n`),
  },
  handler: async (run, { signal }) => {
    appendFileSync(executions, `${JSON.stringify({ runId: run.runId, fencingToken: run.fencingToken })}\n`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 10 + Math.random() * 490);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
    if (Math.random() < FAIL_RATE) throw new Error('chaos: the handler failed, as 5% do');
  },
});

worker.stopOnSignals({ graceMs: 5_000 });
worker.run().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`chaos worker failed: ${String(error)}\n`);
    process.exit(1);
  },
);
