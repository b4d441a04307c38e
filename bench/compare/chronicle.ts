import * as path from 'node:path';
import type { Pool } from 'pg';
import { PENDING_RUN_STATES } from '@chronicle/domain';
import { createTeam, type ApiClient, waitUntilHealthy } from '@chronicle/e2e-support';
import { createPool, findFreePort } from '@chronicle/platform';
import { SchedulerClient, Worker } from '@chronicle/worker-sdk';
import { withPool } from '../bench-database';
import { startNodeChild, type Child } from './child-processes';
import { JSON_COUNTER_SCRIPT, JsonMeter } from './json-meter';
import { auditRunLog } from './log-audit.sql';
import type {
  BenchPayload,
  BenchRun,
  LogAudit,
  OnHandlerStart,
  QueueSystem,
  QueueSystemFactory,
  RunsCounted,
  ScratchDatabases,
  SystemMeter,
} from './queue-system';
import { readHotUpdatePercent } from './table-stats.sql';

/** The built `npm start`, and the admin token the bench starts it with. */
export const SERVER_SCRIPT = path.join(__dirname, '../../apps/server/src/main.js');
export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const QUEUE = 'bench';
const JOB = 'bench.noop';
/** Two worker processes' worth, each with a lease batch of 100 (the protocol's ceiling). */
const WORKERS = 2;
const WORKER_CONCURRENCY = 100;
const READY_TIMEOUT_MS = 60_000;
/** The read model's run table, whose updates are the runs' transitions. */
const RUN_TABLE = 'runs';

/**
 * Our product as a user deploys it: the built server (api + scheduler +
 * projector in one process) on its own database, runs enqueued over HTTP,
 * no-op handlers in SDK Workers that lease in batches over HTTP.
 */
export const chronicle: QueueSystemFactory = {
  label: 'chronicle',
  create: () => new ChronicleSystem(),
};

/**
 * The same with its event log in a database of its own (EVENT_STORE_URL, a
 * second scratch database on the same server): each append then commits on
 * its own, before the rows of the read models.
 */
export const chronicleSplit: QueueSystemFactory = {
  label: 'chronicle split',
  create: () => new ChronicleSystem({ splitLog: true }),
};

/** The workers' window for the opt-in prefetch (WorkerOptions.prefetchMs): the protocol's most. */
const PREFETCH_MS = 2000;
/**
 * A prefetched run holds its worker's slot until its due time, so prefetching workers have slots for
 * a whole burst: the timeliness scenario's 2,000 runs due at one instant.
 */
const PREFETCH_CONCURRENCY = 1000;

/**
 * Opt-in, and labelled so: the same with workers that lease runs up to PREFETCH_MS ahead of their
 * due time and start each at it (notBefore). Only where it changes something: runs due at one instant.
 */
export const chroniclePrefetch: QueueSystemFactory = {
  label: 'chronicle prefetch (opt-in)',
  create: () => new ChronicleSystem({ prefetchMs: PREFETCH_MS }),
  scenarios: ['timeliness'],
};

/** The concurrency keys of the keyed drain: customers, say, each with one run leased at a time. */
const KEYS = 1_000;

/**
 * Flow control's cost, labelled so: the same with every run enqueued with one of KEYS concurrency keys in
 * turn, and the job at perKeyConcurrency 1 (docs/api.md, "Dispatch: priorities, fairness, concurrency").
 * Where it changes something: the drain, every run ready at once.
 */
export const chronicleKeyed: QueueSystemFactory = {
  label: 'chronicle keyed (1000 keys)',
  create: () => new ChronicleSystem({ keys: KEYS }),
  scenarios: ['drain'],
};

/** A rate far above what the drain reaches: a million runs a second (docs/api.md, "Rate limits"). */
const RATE = { limit: 1_000_000, per: 'second' } as const;

/**
 * A rate limit's cost when it holds nothing back, labelled so: the same with the job's `rate` at RATE, so
 * that every claim takes the job's bucket's lock, counts its tokens and writes it back.
 */
export const chronicleRated: QueueSystemFactory = {
  label: 'chronicle rated (rate above the drain)',
  create: () => new ChronicleSystem({ rate: RATE }),
  scenarios: ['drain'],
};

/** How a ChronicleSystem is set up beside the plain one. */
interface ChronicleSetup {
  /** Its event log in a database of its own. */
  readonly splitLog?: boolean;
  /** The workers' prefetchMs. */
  readonly prefetchMs?: number;
  /** Its runs enqueued with this many concurrency keys in turn, the job at perKeyConcurrency 1. */
  readonly keys?: number;
  /** The job's rate. */
  readonly rate?: typeof RATE;
}

class ChronicleSystem implements QueueSystem {
  readonly system = 'chronicle';
  readonly config: string;
  readonly settings: string;
  readonly enqueueBatchSize = 1000;
  /** Each worker's. */
  private readonly concurrency: number;
  private databaseUrl = '';
  /** Where the log is: the system's own database, or the second one of split mode. */
  private logUrl = '';
  private server: Child | undefined;
  private team: ApiClient | undefined;
  private baseUrl = '';
  private workerToken = '';
  private pool: Pool | undefined;
  private readonly workers: Worker[] = [];
  private readonly running: Array<Promise<void>> = [];
  /** The server's JSON passes in the measured window (the cost-per-run block). */
  private readonly json = new JsonMeter(() => this.server?.pid);
  readonly meters: readonly SystemMeter[] = [this.json];

  /** Runs enqueued so far: the next one's concurrency key, in turn. */
  private enqueued = 0;

  private readonly splitLog: boolean;
  private readonly prefetchMs: number;
  private readonly keys: number;
  private readonly rate: ChronicleSetup['rate'];

  constructor({ splitLog = false, prefetchMs = 0, keys = 0, rate }: ChronicleSetup = {}) {
    this.splitLog = splitLog;
    this.prefetchMs = prefetchMs;
    this.keys = keys;
    this.rate = rate;
    this.concurrency = prefetchMs > 0 ? PREFETCH_CONCURRENCY : WORKER_CONCURRENCY;
    this.config = splitLog
      ? 'split log'
      : prefetchMs > 0
        ? 'server, workers prefetching'
        : keys > 0
          ? `server, ${keys} concurrency keys`
          : rate !== undefined
            ? `server, rate ${rate.limit} per ${rate.per}`
            : 'server';
    this.settings =
      `one server process (PG_POOL_SIZE default 10)${splitLog ? ', its event log in a database of its own (EVENT_STORE_URL)' : ''}; ` +
      `${WORKERS} SDK Workers x concurrency ${this.concurrency}, lease batches up to 100, waitSeconds 5` +
      (prefetchMs > 0 ? `, prefetchMs ${prefetchMs}` : '') +
      (keys > 0 ? `; runs of ${keys} concurrency keys in turn, perKeyConcurrency 1` : '') +
      (rate !== undefined ? `; the job's rate ${rate.limit} per ${rate.per}` : '');
  }

  async start(databases: ScratchDatabases): Promise<void> {
    const databaseUrl = databases.url;
    this.databaseUrl = databaseUrl;
    // The server migrates a log database of its own as it starts.
    this.logUrl = this.splitLog ? await databases.create('scheduler_bench_log') : databaseUrl;
    const port = await findFreePort();
    this.baseUrl = `http://127.0.0.1:${port}`;
    this.server = startNodeChild(
      SERVER_SCRIPT,
      {
        DATABASE_URL: databaseUrl,
        ...(this.splitLog ? { EVENT_STORE_URL: this.logUrl } : {}),
        PORT: String(port),
        SCHEDULER_ADMIN_TOKEN: ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
        // The peers have no canaries; their runs would sit on a queue no bench worker drains.
        CANARIES: 'off',
        ...(await this.json.env()),
      },
      undefined,
      ['--require', JSON_COUNTER_SCRIPT],
    );
    await waitUntilHealthy(this.baseUrl, { timeoutMs: READY_TIMEOUT_MS, output: () => this.server?.output() ?? '' });
    const clients = await createTeam(this.baseUrl, ADMIN_TOKEN, 'bench', [QUEUE]);
    this.team = clients.team;
    this.workerToken = clients.workerToken;
    // No retries: a no-op handler does not fail, and a failure should show, not hide.
    const defined = await this.team.put(`/v1/jobs/${JOB}`, {
      queue: QUEUE,
      retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
      ...(this.keys > 0 ? { perKeyConcurrency: 1 } : {}),
      ...(this.rate === undefined ? {} : { rate: this.rate }),
    });
    if (defined.status !== 201) throw new Error(`job not defined: ${defined.status} ${JSON.stringify(defined.body)}`);
    this.pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: 'bench-observer' });
  }

  processIds(): readonly number[] {
    return this.server?.pid === undefined ? [] : [this.server.pid];
  }

  async enqueue(runs: readonly BenchRun[]): Promise<void> {
    const body = {
      runs: runs.map((run) => ({
        job: JOB,
        payload: run.payload,
        ...(run.runAt === undefined ? {} : { runAt: run.runAt.toISOString() }),
        ...(this.keys > 0 ? { concurrencyKey: `customer-${this.enqueued++ % this.keys}` } : {}),
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
        concurrency: this.concurrency,
        waitSeconds: 5,
        leaseSeconds: 60,
        workerId: `bench-${i}`,
        prefetchMs: this.prefetchMs,
        handler: async (run) => onHandlerStart(run.payload as BenchPayload),
      });
      this.workers.push(worker);
      this.running.push(worker.run());
    }
  }

  async countUnfinished(): Promise<number> {
    const { rows } = await this.pool!.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${RUN_TABLE} WHERE queue = $2 AND state = ANY($1::text[])`,
      [PENDING_RUN_STATES, QUEUE],
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

  /** The log's database: in split mode the second one, which the rows' database knows nothing of. */
  async auditLog(runs: RunsCounted): Promise<LogAudit> {
    return withPool(this.logUrl, 'bench-log-audit', (log) => auditRunLog(log, runs));
  }

  async hotUpdatePercent(): Promise<number | undefined> {
    return withPool(this.databaseUrl, 'bench-table-stats', (pool) => readHotUpdatePercent(pool, RUN_TABLE));
  }
}
