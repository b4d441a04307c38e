import * as path from 'node:path';
import type { Pool } from 'pg';
import { createTeam, type ApiClient, waitUntilHealthy } from '@chronicle/e2e-support';
import { createPool, findFreePort } from '@chronicle/platform';
import { SchedulerClient, Worker } from '@chronicle/worker-sdk';
import { startNodeChild, type Child } from './child-processes';
import type { BenchPayload, BenchRun, OnHandlerStart, QueueSystem, QueueSystemFactory } from './queue-system';

const SERVER_SCRIPT = path.join(__dirname, '../../apps/server/src/main.js');
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const QUEUE = 'bench';
const JOB = 'bench.noop';
/** Two worker processes' worth, each with a lease batch of 100 (the protocol's ceiling). */
const WORKERS = 2;
const WORKER_CONCURRENCY = 100;
const READY_TIMEOUT_MS = 60_000;

/**
 * Our product as a user deploys it: the built server (api + scheduler +
 * projector in one process) on its own database, runs enqueued over HTTP,
 * no-op handlers in SDK Workers that lease in batches over HTTP.
 */
export const chronicle: QueueSystemFactory = {
  label: 'chronicle',
  create: () => new ChronicleSystem(),
};

class ChronicleSystem implements QueueSystem {
  readonly system = 'chronicle';
  readonly config = 'server';
  readonly settings = `one server process (PG_POOL_SIZE default 10); ${WORKERS} SDK Workers x concurrency ${WORKER_CONCURRENCY}, lease batches up to 100, waitSeconds 5`;
  readonly enqueueBatchSize = 1000;
  private server: Child | undefined;
  private team: ApiClient | undefined;
  private baseUrl = '';
  private workerToken = '';
  private pool: Pool | undefined;
  private readonly workers: Worker[] = [];
  private readonly running: Array<Promise<void>> = [];

  async start(databaseUrl: string): Promise<void> {
    const port = await findFreePort();
    this.baseUrl = `http://127.0.0.1:${port}`;
    this.server = startNodeChild(SERVER_SCRIPT, {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      SCHEDULER_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
    });
    await waitUntilHealthy(this.baseUrl, { timeoutMs: READY_TIMEOUT_MS, output: () => this.server?.output() ?? '' });
    const clients = await createTeam(this.baseUrl, ADMIN_TOKEN, 'bench', [QUEUE]);
    this.team = clients.team;
    this.workerToken = clients.workerToken;
    // No retries: a no-op handler does not fail, and a failure should show, not hide.
    const defined = await this.team.put(`/v1/jobs/${JOB}`, {
      queue: QUEUE,
      retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
    });
    if (defined.status !== 201) throw new Error(`job not defined: ${defined.status} ${JSON.stringify(defined.body)}`);
    this.pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: 'bench-observer' });
  }

  async enqueue(runs: readonly BenchRun[]): Promise<void> {
    const body = {
      runs: runs.map((run) => ({
        job: JOB,
        payload: run.payload,
        ...(run.runAt === undefined ? {} : { runAt: run.runAt.toISOString() }),
      })),
    };
    const response = await this.team!.post('/v1/runs:batch', body);
    if (response.status !== 200)
      throw new Error(`runs:batch answered ${response.status}: ${JSON.stringify(response.body).slice(0, 300)}`);
  }

  async startWorkers(onHandlerStart: OnHandlerStart): Promise<void> {
    for (let i = 0; i < WORKERS; i++) {
      const worker = new Worker({
        client: new SchedulerClient({ baseUrl: this.baseUrl, token: this.workerToken }),
        queues: [QUEUE],
        concurrency: WORKER_CONCURRENCY,
        waitSeconds: 5,
        leaseSeconds: 60,
        workerId: `bench-${i}`,
        handler: async (run) => onHandlerStart(run.payload as BenchPayload),
      });
      this.workers.push(worker);
      this.running.push(worker.run());
    }
  }

  async countUnfinished(): Promise<number> {
    const { rows } = await this.pool!.query<{ n: string }>(
      `SELECT count(*) AS n FROM runs WHERE state IN ('scheduled', 'leased', 'retry_wait')`,
    );
    return Number(rows[0]!.n);
  }

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.shutdown({ graceMs: 5_000 })));
    await Promise.all(this.running);
    this.workers.length = 0;
    this.running.length = 0;
    await this.pool?.end();
    this.pool = undefined;
    await this.server?.stop();
    this.server = undefined;
  }
}
