import { Pool } from 'pg';
import { survivingConnectionLoss } from '@chronicle/platform';
import type * as PgBossPackage from 'pg-boss' with { 'resolution-mode': 'import' };
import type {
  BenchPayload,
  BenchRun,
  OnHandlerStart,
  QueueSystem,
  QueueSystemFactory,
  ScratchDatabases,
} from './queue-system';

type PgBossModule = typeof PgBossPackage;
type PgBoss = InstanceType<PgBossModule['PgBoss']>;
type WorkOptions = NonNullable<Parameters<PgBoss['work']>[1]> & object;

const QUEUE = 'bench-noop';

interface PgBossSettings {
  /** LISTEN/NOTIFY, so idle workers wake on a new job instead of at their next poll. */
  readonly notify: boolean;
  readonly work: WorkOptions;
}

/**
 * pg-boss for throughput: 4 fetch loops of 250 jobs, each fetching again at
 * once while batches come back full (burstWhenBatchFull), NOTIFY on the queue
 * for idle workers, and the shortest poll it allows (0.5 s). The poll is set
 * for NOTIFY mode too: that mode's default (30 s) is all that picks up a run
 * that was inserted with a later start time.
 */
const TUNED: PgBossSettings = {
  notify: true,
  work: {
    batchSize: 250,
    localConcurrency: 4,
    burstWhenBatchFull: true,
    pollingIntervalSeconds: 0.5,
    notifyPollingIntervalSeconds: 0.5,
  },
};

export const pgBossTuned: QueueSystemFactory = {
  label: 'pg-boss tuned',
  create: () =>
    new PgBossSystem(
      'tuned',
      TUNED,
      'localConcurrency 4 x batchSize 250, burstWhenBatchFull, pollingIntervalSeconds and notifyPollingIntervalSeconds 0.5, useListenNotify + queue notify',
    ),
};

export const pgBossDefaults: QueueSystemFactory = {
  label: 'pg-boss defaults',
  create: () =>
    new PgBossSystem(
      'defaults',
      { notify: false, work: {} },
      'defaults: one loop, batchSize 1, pollingIntervalSeconds 2, no NOTIFY',
    ),
};

class PgBossSystem implements QueueSystem {
  readonly system = 'pg-boss';
  readonly enqueueBatchSize = 1000;
  private boss: PgBoss | undefined;
  private pool: Pool | undefined;

  constructor(
    readonly config: string,
    private readonly tuning: PgBossSettings,
    readonly settings: string,
  ) {}

  async start({ url: databaseUrl }: ScratchDatabases): Promise<void> {
    const { PgBoss } = await import('pg-boss'); // ESM-only: a real dynamic import under module=node16
    const boss = new PgBoss({ connectionString: databaseUrl, useListenNotify: this.tuning.notify });
    this.boss = boss;
    boss.on('error', (error: unknown) =>
      process.stderr.write(`pg-boss: ${error instanceof Error ? error.message : String(error)}\n`),
    );
    await boss.start();
    await boss.createQueue(QUEUE, { retryLimit: 0, notify: this.tuning.notify });
    this.pool = survivingConnectionLoss(
      new Pool({ connectionString: databaseUrl, max: 1, application_name: 'bench-observer' }),
    );
  }

  async enqueue(runs: readonly BenchRun[]): Promise<void> {
    // insert() is one multi-row INSERT: pg-boss's bulk insert.
    await this.boss!.insert(
      QUEUE,
      runs.map((run) => ({ data: run.payload, ...(run.runAt === undefined ? {} : { startAfter: run.runAt }) })),
    );
  }

  async startWorkers(onHandlerStart: OnHandlerStart): Promise<void> {
    await this.boss!.work<BenchPayload>(QUEUE, this.tuning.work, async (jobs) => {
      for (const job of jobs) onHandlerStart(job.data);
    });
  }

  async countUnfinished(): Promise<number> {
    const { rows } = await this.pool!.query<{ n: string }>(
      `SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry', 'active')`,
      [QUEUE],
    );
    return Number(rows[0]!.n);
  }

  async stop(): Promise<void> {
    await this.boss?.stop({ graceful: true, timeout: 10_000 });
    this.boss = undefined;
    await this.pool?.end();
    this.pool = undefined;
  }

  /** pg-boss keeps no log: its job rows are all there is. */
  async auditLog(): Promise<undefined> {
    return undefined;
  }

  /** Reported for our run table only. */
  async hotUpdatePercent(): Promise<undefined> {
    return undefined;
  }
}
