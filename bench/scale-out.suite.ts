import { readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import type { Pool } from 'pg';
import { PENDING_RUN_STATES } from '@chronicle/domain';
import { createTeam, type ApiClient } from '@chronicle/e2e-support';
import { createPool, findFreePort } from '@chronicle/platform';
import { SchedulerClient, Worker, type LeasedRun } from '@chronicle/worker-sdk';
import type { BenchServer, ScratchDatabase } from './bench-database';
import { Slot } from './chaos/fleet';
import { ADMIN_TOKEN, SERVER_SCRIPT } from './compare/chronicle';
import type { BenchSuite } from './compare/peer-comparison.suite';
import { formatCount, formatTable, quantile } from './table';

/**
 * `npm run bench -- --only=scale-out`: what more processes on one database buy.
 *
 * - Lease throughput with 1, 2 and 3 API processes (`ROLES=api`; the scheduler and the projector in
 *   a process of their own): a backlog of ready runs drained by the same 4 SDK Workers (concurrency
 *   100 each), spread over the API processes; completions a second.
 * - Claim latency while a shard takeover happens: two nodes of API + scheduler with 200 minutely
 *   cron jobs; a probe leases one run at a time from the first node while a producer keeps runs
 *   ready; the second node is SIGKILLed, and the probe's latency before, during (until the first
 *   node has served the dead one's shards) and after is compared.
 */
const QUEUE = 'scale';
const JOB = 'scale.noop';
const WORKERS = 4;
const WORKER_CONCURRENCY = 100;
const BACKLOG = { full: 30_000, quick: 6_000 };
const API_PROCESSES = [1, 2, 3];
const CRON_JOBS = 200;
const PROBE_EVERY_MS = 50;
const PRODUCE_PER_SECOND = 40;
const BASELINE_MS = 15_000;
const AFTER_TAKEOVER_MS = 10_000;
const TAKEOVER_TIMEOUT_MS = 30_000;

interface Throughput {
  readonly apiProcesses: number;
  readonly runs: number;
  readonly seconds: number;
  readonly completionsPerSecond: number;
  /** The machine's CPUs busy during the drain, % of all (from /proc/stat): what another process could use. */
  readonly machineBusyPercent: number | undefined;
}

interface ClaimWindow {
  readonly window: 'before' | 'during takeover' | 'after';
  readonly claims: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly failed: number;
}

interface TakeoverReport {
  readonly shardsTaken: number;
  /** The kill to the surviving node's first materialiser pass over the last of the dead node's shards. */
  readonly takeoverSeconds: number;
  readonly windows: readonly ClaimWindow[];
}

export const scaleOut: BenchSuite = {
  name: 'scale-out',
  scenarios: ['scale-out'],
  run: async (server, options) => {
    const backlog = options.sizes.repetitions === 1 ? BACKLOG.quick : BACKLOG.full;
    const throughputs: Throughput[] = [];
    for (const apiProcesses of API_PROCESSES) {
      options.progress(`lease throughput with ${apiProcesses} API processes, ${formatCount(backlog)} runs`);
      throughputs.push(await leaseThroughput(server, apiProcesses, backlog));
    }
    options.progress('claim latency while a shard takeover happens');
    const takeover = await claimsDuringTakeover(server);
    return {
      print: (out) => out.write(formatReport(server.description, throughputs, takeover)),
      json: { server: server.description, throughputs, takeover },
    };
  },
};

/** A fleet of server processes on one scratch database; stop() stops them and drops it. */
async function fleet(db: ScratchDatabase, roles: readonly string[]): Promise<{ slots: Slot[]; stop(): Promise<void> }> {
  const slots: Slot[] = [];
  for (const [i, role] of roles.entries())
    slots.push(
      new Slot({
        kind: 'node',
        name: `bench-${i}`,
        script: SERVER_SCRIPT,
        port: await findFreePort(),
        env: {
          DATABASE_URL: db.url,
          ROLES: role,
          SCHEDULER_ADMIN_TOKEN: ADMIN_TOKEN,
          LOG_LEVEL: 'warn',
          CANARIES: 'off',
        },
      }),
    );
  // The first migrates; the others find the database migrated.
  await slots[0]!.start();
  await Promise.all(slots.slice(1).map((s) => s.start()));
  return {
    slots,
    stop: async () => {
      await Promise.all(slots.map((s) => s.stop()));
      await db.drop();
    },
  };
}

const urlOf = (slot: Slot): string => `http://127.0.0.1:${slot.spec.port!}`;

async function leaseThroughput(server: BenchServer, apiProcesses: number, runs: number): Promise<Throughput> {
  const db = await server.createDatabase('scheduler_bench_scale');
  const processes = await fleet(db, ['scheduler,projector', ...Array.from({ length: apiProcesses }, () => 'api')]);
  const pool = createPool({ connectionString: db.url, max: 1, applicationName: 'bench-observer' });
  const workers: Worker[] = [];
  try {
    const apis = processes.slots.slice(1);
    const clients = await createTeam(urlOf(apis[0]!), ADMIN_TOKEN, 'scale', [QUEUE]);
    await defineJob(clients.team, JOB, {});
    for (let done = 0; done < runs; done += 1000) await enqueueBatch(clients.team, Math.min(1000, runs - done));
    const started = Date.now();
    const cpuBefore = await machineCpu();
    const running = Array.from({ length: WORKERS }, (_, i) => {
      const worker = new Worker({
        client: new SchedulerClient({ baseUrl: urlOf(apis[i % apis.length]!), token: clients.workerToken }),
        queues: [QUEUE],
        concurrency: WORKER_CONCURRENCY,
        waitSeconds: 5,
        logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
        handler: async () => undefined,
      });
      workers.push(worker);
      return worker.run();
    });
    while ((await countUnfinished(pool)) > 0) await sleep(100);
    const seconds = (Date.now() - started) / 1000;
    const cpuAfter = await machineCpu();
    const machineBusyPercent =
      cpuBefore === undefined || cpuAfter === undefined
        ? undefined
        : (100 * (cpuAfter.busy - cpuBefore.busy)) / (cpuAfter.total - cpuBefore.total);
    await Promise.all(workers.map((w) => w.shutdown({ graceMs: 5_000 })));
    await Promise.all(running);
    return { apiProcesses, runs, seconds, completionsPerSecond: runs / seconds, machineBusyPercent };
  } finally {
    await pool.end();
    await processes.stop();
  }
}

async function claimsDuringTakeover(server: BenchServer): Promise<TakeoverReport> {
  const db = await server.createDatabase('scheduler_bench_takeover');
  const processes = await fleet(db, ['api,scheduler', 'api,scheduler', 'projector']);
  const [survivor, victim] = processes.slots as [Slot, Slot];
  const pool = createPool({ connectionString: db.url, max: 2, applicationName: 'bench-observer' });
  const samples: Array<{ at: number; ms: number; ok: boolean }> = [];
  let stopping = false;
  try {
    const clients = await createTeam(urlOf(survivor), ADMIN_TOKEN, 'scale', [QUEUE]);
    await defineJob(clients.team, JOB, {});
    for (let i = 0; i < CRON_JOBS; i++)
      await defineJob(clients.team, `scale.cron-${i}`, {
        schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 0 },
      });
    await waitForSpread(pool, victim.pid!);
    const client = new SchedulerClient({ baseUrl: urlOf(survivor), token: clients.workerToken });
    const producing = (async () => {
      while (!stopping) {
        await enqueueBatch(clients.team, PRODUCE_PER_SECOND / 10).catch(() => undefined);
        await sleep(100);
      }
    })();
    const probing = (async () => {
      while (!stopping) {
        const started = performance.now();
        const leased: readonly LeasedRun[] | undefined = await client
          .lease({ queues: [QUEUE], max: 1, waitSeconds: 0 })
          .then(
            (r) => r.leases,
            () => undefined,
          );
        samples.push({ at: Date.now(), ms: performance.now() - started, ok: leased !== undefined });
        for (const run of leased ?? [])
          await client
            .complete(run.runId, { fencingToken: run.fencingToken, outcome: 'success' })
            .catch(() => undefined);
        await sleep(PROBE_EVERY_MS);
      }
    })();
    await sleep(BASELINE_MS);
    const held = await shardsOf(pool, victim.pid!);
    const killedAt = Date.now();
    await victim.kill();
    const servedAt = await waitForTakeover(pool, held, killedAt);
    await sleep(AFTER_TAKEOVER_MS);
    stopping = true;
    await Promise.all([producing, probing]);
    const window = (name: ClaimWindow['window'], from: number, to: number): ClaimWindow => {
      const inside = samples.filter((s) => s.at >= from && s.at < to);
      const times = inside.filter((s) => s.ok).map((s) => s.ms);
      return {
        window: name,
        claims: times.length,
        p50Ms: quantile(times, 0.5),
        p99Ms: quantile(times, 0.99),
        maxMs: Math.max(...times),
        failed: inside.length - times.length,
      };
    };
    return {
      shardsTaken: held.length,
      takeoverSeconds: (servedAt - killedAt) / 1000,
      windows: [
        window('before', killedAt - BASELINE_MS + 2_000, killedAt),
        window('during takeover', killedAt, servedAt),
        window('after', servedAt, Number.POSITIVE_INFINITY),
      ],
    };
  } finally {
    stopping = true;
    await pool.end();
    await processes.stop();
  }
}

async function defineJob(team: ApiClient, name: string, extra: Record<string, unknown>): Promise<void> {
  const answer = await team.put(`/v1/jobs/${name}`, {
    queue: QUEUE,
    retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
    ...extra,
  });
  if (answer.status !== 201 && answer.status !== 200)
    throw new Error(`job ${name} not defined: ${answer.status} ${JSON.stringify(answer.body)}`);
}

async function enqueueBatch(team: ApiClient, count: number): Promise<void> {
  const answer = await team.post('/v1/runs:batch', { runs: Array.from({ length: count }, () => ({ job: JOB })) });
  if (answer.status !== 200) throw new Error(`runs:batch answered ${answer.status}`);
}

async function countUnfinished(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM runs WHERE state = ANY($1::text[])',
    [PENDING_RUN_STATES],
  );
  return rows[0]!.n;
}

const ownedBy = (pid: number): string => `%:${pid}#%`;

async function shardsOf(pool: Pool, pid: number): Promise<number[]> {
  const { rows } = await pool.query<{ shard: number }>('SELECT shard FROM shard_leases WHERE owner LIKE $1', [
    ownedBy(pid),
  ]);
  return rows.map((r) => r.shard);
}

async function waitForSpread(pool: Pool, pid: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await shardsOf(pool, pid)).length < 8) {
    if (Date.now() > deadline) throw new Error('the shards did not spread over the two nodes within 30 s');
    await sleep(200);
  }
}

/** When the last of `shards` had a materialiser pass by a new owner, granted after the kill. */
async function waitForTakeover(pool: Pool, shards: readonly number[], killedAt: number): Promise<number> {
  const deadline = Date.now() + TAKEOVER_TIMEOUT_MS;
  for (;;) {
    const { rows } = await pool.query<{ served: number | null }>(
      `SELECT CASE WHEN bool_and(granted_at >= to_timestamp($2 / 1000.0) AND last_materialised_at >= granted_at)
                   THEN (extract(epoch FROM max(last_materialised_at)) * 1000)::float8 END AS served
         FROM shard_leases WHERE shard = ANY($1::int[])`,
      [shards, killedAt],
    );
    if (rows[0]!.served !== null) return rows[0]!.served;
    if (Date.now() > deadline)
      throw new Error(`the dead node's shards were not served within ${TAKEOVER_TIMEOUT_MS / 1000} s`);
    await sleep(100);
  }
}

function formatReport(description: string, throughputs: readonly Throughput[], takeover: TakeoverReport): string {
  const base = throughputs[0]!.completionsPerSecond;
  const rows = [
    ['API processes', 'runs', 'seconds', 'completions/s', 'vs 1', 'CPUs busy'],
    ...throughputs.map((t) => [
      String(t.apiProcesses),
      formatCount(t.runs),
      t.seconds.toFixed(1),
      formatCount(t.completionsPerSecond),
      `${(t.completionsPerSecond / base).toFixed(2)}x`,
      t.machineBusyPercent === undefined ? '-' : `${t.machineBusyPercent.toFixed(0)}%`,
    ]),
  ];
  const claims = [
    ['claims (1 run, no wait)', 'claims', 'p50 ms', 'p99 ms', 'max ms', 'failed'],
    ...takeover.windows.map((w) => [
      w.window,
      formatCount(w.claims),
      w.p50Ms.toFixed(1),
      w.p99Ms.toFixed(1),
      w.maxMs.toFixed(1),
      String(w.failed),
    ]),
  ];
  return (
    `\nScale-out on one database (${description}, ${cpus().length} CPUs); ${WORKERS} SDK Workers x ${WORKER_CONCURRENCY} ` +
    `in the bench's process, no-op handlers\n\n` +
    formatTable(rows) +
    `\nA node of two (API + scheduler, 200 minutely cron jobs) SIGKILLed: its ${takeover.shardsTaken} shards ` +
    `served by the other ${takeover.takeoverSeconds.toFixed(1)} s later\n\n` +
    formatTable(claims)
  );
}

/** The machine's CPU time so far, busy and in all, in clock ticks (Linux's /proc/stat); undefined elsewhere. */
async function machineCpu(): Promise<{ busy: number; total: number } | undefined> {
  const stat = await readFile('/proc/stat', 'utf8').catch(() => undefined);
  const fields = stat?.split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number);
  if (fields === undefined || fields.length < 5) return undefined;
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = fields[3]! + fields[4]!; // idle, iowait
  return { busy: total - idle, total };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
