'use strict';
/**
 * An example worker, as a team's own repository would have it: plain
 * CommonJS, no build step, the SDK installed by path.
 *
 *   SCHEDULER_URL    the scheduler's base URL, e.g. http://localhost:3000
 *   SCHEDULER_TOKEN  a worker token for QUEUE
 *   QUEUE            the queue(s) to work, comma-separated
 *   CONCURRENCY      runs at once (default 4)
 *   WAIT_SECONDS     long-poll length of a lease call, 0..30 (default 20)
 *   EXIT_AFTER       stop after this many runs (default: run until SIGTERM/SIGINT)
 *
 * Each run is logged to stdout as one JSON line and completed as a success;
 * a payload with `"fail": "..."` fails it without retries (NonRetryableError).
 * The worker's own messages go to stderr.
 */
const { NonRetryableError, SchedulerClient, Worker } = require('@chronicle/worker-sdk');

function requiredEnv(name) {
  const value = process.env[name];
  if (value === undefined || value === '') {
    console.error(`${name} is not set (see the comment at the top of worker.js)`);
    process.exit(2);
  }
  return value;
}

function log(level, message, fields) {
  process.stderr.write(`${JSON.stringify({ level, message, ...fields })}\n`);
}

const exitAfter = process.env.EXIT_AFTER === undefined ? Infinity : Number(process.env.EXIT_AFTER);
let handled = 0;

const worker = new Worker({
  client: new SchedulerClient({ baseUrl: requiredEnv('SCHEDULER_URL'), token: requiredEnv('SCHEDULER_TOKEN') }),
  queues: requiredEnv('QUEUE').split(','),
  concurrency: Number(process.env.CONCURRENCY ?? 4),
  waitSeconds: Number(process.env.WAIT_SECONDS ?? 20),
  workerId: `example-worker-${process.pid}`,
  logger: { info: (m, f) => log('info', m, f), warn: (m, f) => log('warn', m, f), error: (m, f) => log('error', m, f) },
  handler: async (run, { attempt, idempotencyKey }) => {
    process.stdout.write(
      `${JSON.stringify({ runId: run.runId, job: run.job, attempt, idempotencyKey, payload: run.payload })}\n`,
    );
    if (run.payload !== null && typeof run.payload === 'object' && typeof run.payload.fail === 'string')
      throw new NonRetryableError(run.payload.fail);
    handled += 1;
    if (handled >= exitAfter) void worker.shutdown();
  },
});

// SIGTERM or SIGINT: stop leasing, let the runs in flight finish, then run() resolves.
worker.stopOnSignals({ graceMs: 10_000 });
log('info', 'worker started', { queues: process.env.QUEUE, pid: process.pid });
worker.run().then(
  () => log('info', 'worker stopped', { handled }),
  (error) => {
    log('error', 'worker failed', { error: String(error) });
    process.exitCode = 1;
  },
);
