import type * as GraphileWorker from 'graphile-worker' with { 'resolution-mode': 'import' };
import { Pool } from 'pg';
import { survivingConnectionLoss } from '@chronicle/platform';
import type {
  BenchPayload,
  BenchRun,
  OnHandlerStart,
  QueueSystem,
  QueueSystemFactory,
  ScratchDatabases,
} from './queue-system';

type GraphileWorkerModule = typeof GraphileWorker;
type Runner = Awaited<ReturnType<GraphileWorkerModule['run']>>;
type WorkerUtils = Awaited<ReturnType<GraphileWorkerModule['makeWorkerUtils']>>;
type WorkerPreset = NonNullable<GraphileConfig.Preset['worker']>;

const TASK = 'bench_noop';

/**
 * The settings of graphile-worker's performance page (the ones its published
 * figures were measured with): 24 concurrent jobs, a pool of 25, a local
 * queue of 500 fetched and locked in one query, completions and failures
 * batched. Prepared statements are on by default; said anyway. The poll for
 * runs that become due later is 0.5 s instead of 2 s, as for pg-boss (its
 * shortest): NOTIFY only covers runs that are due when inserted.
 */
const TUNED: WorkerPreset = {
  concurrentJobs: 24,
  maxPoolSize: 25,
  preparedStatements: true,
  localQueue: { size: 500 },
  completeJobBatchDelay: 0,
  failJobBatchDelay: 0,
  pollInterval: 500,
};

export const graphileWorkerTuned: QueueSystemFactory = {
  label: 'graphile-worker tuned',
  create: () =>
    new GraphileWorkerSystem(
      'tuned',
      TUNED,
      'concurrentJobs 24, maxPoolSize 25, localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0, preparedStatements on, pollInterval 0.5 s',
    ),
};

export const graphileWorkerDefaults: QueueSystemFactory = {
  label: 'graphile-worker defaults',
  create: () =>
    new GraphileWorkerSystem(
      'defaults',
      {},
      'defaults: concurrentJobs 1, maxPoolSize 10, no local queue, one completion per job, pollInterval 2 s (+ LISTEN/NOTIFY)',
    ),
};

class GraphileWorkerSystem implements QueueSystem {
  readonly system = 'graphile-worker';
  readonly enqueueBatchSize = 1000;
  private databaseUrl = '';
  private utils: WorkerUtils | undefined;
  private runner: Runner | undefined;
  private pool: Pool | undefined;

  constructor(
    readonly config: string,
    private readonly preset: WorkerPreset,
    readonly settings: string,
  ) {}

  async start({ url: databaseUrl }: ScratchDatabases): Promise<void> {
    this.databaseUrl = databaseUrl;
    const { makeWorkerUtils } = await loadGraphileWorker();
    this.utils = await makeWorkerUtils({ connectionString: databaseUrl, logger: await silentLogger() });
    await this.utils.migrate();
    this.pool = survivingConnectionLoss(
      new Pool({ connectionString: databaseUrl, max: 1, application_name: 'bench-observer' }),
    );
  }

  async enqueue(runs: readonly BenchRun[]): Promise<void> {
    // addJobs is one add_jobs() call: graphile-worker's bulk insert.
    await this.utils!.addJobs(
      runs.map((run) => ({
        identifier: TASK,
        payload: run.payload,
        maxAttempts: 1,
        ...(run.runAt === undefined ? {} : { runAt: run.runAt }),
      })),
    );
  }

  async startWorkers(onHandlerStart: OnHandlerStart): Promise<void> {
    const { run } = await loadGraphileWorker();
    this.runner = await run({
      noHandleSignals: true,
      taskList: { [TASK]: async (payload) => onHandlerStart(payload as BenchPayload) },
      preset: { worker: { ...this.preset, connectionString: this.databaseUrl, logger: await silentLogger() } },
    });
  }

  async countUnfinished(): Promise<number> {
    // Completed jobs are deleted; a failed one (maxAttempts 1) stays with attempts = max_attempts.
    const { rows } = await this.pool!.query<{ n: string }>(
      'SELECT count(*) AS n FROM graphile_worker._private_jobs WHERE attempts < max_attempts',
    );
    return Number(rows[0]!.n);
  }

  async stop(): Promise<void> {
    await this.runner?.stop();
    this.runner = undefined;
    await this.utils?.release();
    this.utils = undefined;
    await this.pool?.end();
    this.pool = undefined;
  }

  /** graphile-worker keeps no log: its job rows are all there is. */
  async auditLog(): Promise<undefined> {
    return undefined;
  }

  /** Reported for our run table only. */
  async hotUpdatePercent(): Promise<undefined> {
    return undefined;
  }
}

// ESM-only package: a real dynamic import, kept as such by module=node16.
function loadGraphileWorker(): Promise<GraphileWorkerModule> {
  return import('graphile-worker');
}

async function silentLogger(): Promise<InstanceType<GraphileWorkerModule['Logger']>> {
  const { Logger } = await loadGraphileWorker();
  return new Logger(() => (level, message) => {
    if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
  });
}
