import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { Pool } from 'pg';
import { PENDING_RUN_STATES, RunEventType } from '@chronicle/domain';
import { createTeam, type ApiClient } from '@chronicle/e2e-support';
import { createPool, findFreePort, openScratchServer, type ScratchServer } from '@chronicle/platform';
import { isTransient, type LeasedRun, SchedulerClient, Worker } from '@chronicle/worker-sdk';
import type { BenchServer, ScratchDatabase } from './bench-database';
import { Slot } from './chaos/fleet';
import { ADMIN_TOKEN, SERVER_SCRIPT } from './compare/chronicle';
import { CpuMeter } from './compare/cpu-meter';
import type { BenchSuite } from './compare/peer-comparison.suite';
import { formatCount, formatTable, quantile } from './table';

/**
 * `npm run bench -- --servers=1,2,3` (or `--only=servers`): the drain with the shards' runs on 1, 2
 * and 3 PostgreSQL servers of this machine (docs/sharding.md). One server is the single database
 * (no shard map); with more, RUN_SHARD_URLS names the bench's database and one database on each
 * further embedded PostgreSQL (the bench's settings), and the one server process (`npm start`'s
 * roles) keeps each shard's runs on its server. A backlog of runs of 16 jobs (every shard, so every
 * server) is drained by 2 SDK Workers x 100; a probe leases one run at a time meanwhile (claim
 * latency). The machine has 2 cores: the total cannot grow here; what must not grow with the
 * servers is the cost per run (CPU µs of every process, all PostgreSQL servers included).
 * Every run's RunScheduled, RunLeased and RunSucceeded are checked in the logs after.
 */
const QUEUE = 'servers';
const JOBS = 16;
const WORKERS = 2;
const WORKER_CONCURRENCY = 100;
const BACKLOG = { full: 20_000, quick: 5_000 };
/** The drain a server is killed in: long enough for a window before the kill and one after. */
const DOWN_BACKLOG = { full: 60_000, quick: 40_000 };
const PROBE_EVERY_MS = 50;
export const DEFAULT_SERVER_COUNTS = [1, 2, 3];

interface ServersRun {
  readonly servers: number;
  readonly runs: number;
  readonly seconds: number;
  readonly completionsPerSecond: number;
  /** CPU µs per run: the machine, and of it every PostgreSQL server's. */
  readonly cpuMicrosecondsPerRun: number | undefined;
  readonly postgresMicrosecondsPerRun: number | undefined;
  /**
   * The machine's CPU while the fleet stood idle (the backlog enqueued, no worker yet), in cores: the
   * work each server and process does whatever the load (scheduler passes, projector polls, PostgreSQL's
   * own), which a drain of a few seconds counts in its cost per run.
   */
  readonly idleCores: number | undefined;
  readonly claimP50Ms: number;
  readonly claimP99Ms: number;
  /** Runs without their RunScheduled, RunLeased and RunSucceeded in the logs. */
  readonly missingFromLog: number;
}

export function runServersSuite(counts: readonly number[]): BenchSuite {
  return {
    name: 'servers',
    scenarios: ['servers'],
    run: async (server, options) => {
      const backlog = options.sizes.repetitions === 1 ? BACKLOG.quick : BACKLOG.full;
      const runs: ServersRun[] = [];
      for (const servers of counts) {
        options.progress(`drain of ${formatCount(backlog)} runs with the shards on ${servers} server(s)`);
        runs.push(await drainOnServers(server, servers, backlog));
      }
      const failures = runs
        .filter((r) => r.missingFromLog > 0)
        .map((r) => `servers: ${r.missingFromLog} runs on ${r.servers} servers lack events in the logs`);
      let down: ServerDown | undefined;
      let moved: (ShardMoved & { run: ServersRun }) | undefined;
      const most = Math.max(...counts);
      if (most >= 2) {
        const faulted = options.sizes.repetitions === 1 ? DOWN_BACKLOG.quick : DOWN_BACKLOG.full;
        options.progress(`drain of ${formatCount(faulted)} runs on ${most} servers, a shard moved midway`);
        let move: ShardMoved | undefined;
        const run = await drainOnServers(server, most, faulted, { kind: 'move', report: (m) => (move = m) });
        moved = move === undefined ? undefined : { ...move, run };
        if (run.missingFromLog !== 0)
          failures.push(
            `servers: a shard moved, ${run.missingFromLog} runs not once in the logs with all their events`,
          );
        // With DATABASE_URL the further "servers" are databases on the bench's own server: a kill would stop it.
        if ((process.env['DATABASE_URL'] ?? '') !== '')
          options.progress(
            'one server killed midway: left out, DATABASE_URL is set: the further servers are databases on its server, which a kill would stop',
          );
        else {
          options.progress(`drain of ${formatCount(faulted)} runs on ${most} servers, one killed midway`);
          await drainOnServers(server, most, faulted, { kind: 'kill', report: (d) => (down = d) });
        }
      }
      return {
        print: (out) => out.write(formatReport(server.description, runs, down, moved)),
        json: { server: server.description, runs, serverDown: down, shardMoved: moved },
        failures,
      };
    },
  };
}

/**
 * A server killed during the drain (SIGQUIT to its postmaster: an immediate stop, as a crash), the others
 * measured: their runs' completions a second in a window before and one after.
 */
interface ServerDown {
  readonly servers: number;
  readonly othersBeforePerSecond: number;
  readonly othersAfterPerSecond: number;
}

const DOWN_WINDOW_MS = 3_000;
/** The window the idle fleet's CPU is measured over, before each drain. */
const IDLE_WINDOW_MS = 3_000;

/**
 * A shard moved during the drain (`chronicle shards move`, shard 0 from the bench's database to the last
 * further server): the command's figures, and the completions a second of the whole fleet over a window
 * before the move and over the move.
 */
interface ShardMoved {
  readonly pauseMs: number;
  readonly movedRuns: number;
  readonly movedEvents: number;
  readonly tookMs: number;
  readonly beforePerSecond: number;
  readonly duringPerSecond: number;
}

type Fault =
  { kind: 'kill'; report: (down: ServerDown) => void } | { kind: 'move'; report: (moved: ShardMoved) => void };

const CLI_SCRIPT = path.join(__dirname, '../apps/cli/src/main.js');
/** The prefix of the scratch folders of the further servers (openScratchServer: a folder of the OS's temp). */
const SCRATCH = 'scheduler-bench-pg-';

async function drainOnServers(server: BenchServer, count: number, backlog: number, fault?: Fault): Promise<ServersRun> {
  const control = await server.createDatabase('scheduler_bench_servers');
  const extra: Array<{ server: ScratchServer; db: ScratchDatabase }> = [];
  const slots: Slot[] = [];
  const workers: Worker[] = [];
  const pools: Pool[] = [];
  let killed: string | undefined;
  try {
    for (let i = 1; i < count; i++) {
      const more = await openScratchServer(SCRATCH);
      extra.push({ server: more, db: await scratchOn(more, server) });
    }
    const runServerUrls = count === 1 ? [] : [control.url, ...extra.map((e) => e.db.url)];
    const port = await findFreePort();
    const slot = new Slot({
      kind: 'node',
      name: 'bench-servers',
      script: SERVER_SCRIPT,
      port,
      env: {
        DATABASE_URL: control.url,
        ...(runServerUrls.length === 0 ? {} : { RUN_SHARD_URLS: runServerUrls.join(',') }),
        SCHEDULER_ADMIN_TOKEN: ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
        CANARIES: 'off',
      },
    });
    slots.push(slot);
    await slot.start();
    const url = `http://127.0.0.1:${port}`;
    pools.push(
      ...(runServerUrls.length === 0 ? [control.url] : runServerUrls).map((u) =>
        createPool({ connectionString: u, max: 1, applicationName: 'bench-observer' }),
      ),
    );
    const clients = await createTeam(url, ADMIN_TOKEN, 'servers', [QUEUE]);
    const jobs = Array.from({ length: JOBS }, (_, i) => `servers.job-${i}`);
    for (const job of jobs) await defineJob(clients.team, job);
    for (let done = 0; done < backlog; done += 1000)
      await enqueue(clients.team, jobs, done, Math.min(1000, backlog - done));

    const ownPids = (): number[] => (slot.pid === undefined ? [] : [slot.pid]);
    const idle = new CpuMeter(ownPids);
    await idle.open();
    await sleep(IDLE_WINDOW_MS);
    // One "run" a microsecond of the window: its machine figure is the cores it kept busy.
    await idle.close(IDLE_WINDOW_MS * 1000);
    const idleCores = idle.microsecondsPerRun()?.machine;
    const cpu = new CpuMeter(ownPids);
    await cpu.open();
    const started = Date.now();
    const running = Array.from({ length: WORKERS }, (_, i) => {
      const worker = new Worker({
        client: new SchedulerClient({ baseUrl: url, token: clients.workerToken }),
        queues: [QUEUE],
        concurrency: WORKER_CONCURRENCY,
        waitSeconds: 5,
        workerId: `bench-servers-${i}`,
        logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
        handler: async () => undefined,
      });
      workers.push(worker);
      return worker.run();
    });
    const claims: number[] = [];
    let draining = true;
    const probe = new SchedulerClient({ baseUrl: url, token: clients.workerToken });
    const probing = (async () => {
      while (draining) {
        const at = performance.now();
        const answer = await probe.lease({ queues: [QUEUE], max: 1, waitSeconds: 0 }).catch(() => undefined);
        if (answer !== undefined) claims.push(performance.now() - at);
        for (const run of answer?.leases ?? []) await completeAsWorkersDo(probe, run);
        await sleep(PROBE_EVERY_MS);
      }
    })();
    if (fault?.kind === 'move' && extra.length > 0) {
      await sleep(1_000);
      const from = await succeeded(pools);
      await sleep(DOWN_WINDOW_MS);
      const atMove = await succeeded(pools);
      const moveStarted = Date.now();
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [CLI_SCRIPT, 'shards', 'move', '0', runServerUrls[runServerUrls.length - 1]!, '--json'],
        { env: { ...process.env, DATABASE_URL: control.url } },
      );
      const took = Date.now() - moveStarted;
      const report = JSON.parse(stdout) as { pauseMs: number; streams: number; events: number; tookMs: number };
      fault.report({
        pauseMs: report.pauseMs,
        movedRuns: report.streams,
        movedEvents: report.events,
        tookMs: report.tookMs,
        beforePerSecond: (atMove - from) / (DOWN_WINDOW_MS / 1000),
        duringPerSecond: ((await succeeded(pools)) - atMove) / (took / 1000),
      });
    }
    if (fault?.kind === 'kill' && extra.length > 0) {
      // The runs of the servers that stay: the bench's and all but the last further one.
      const others = pools.slice(0, -1);
      const window = async (): Promise<number> => {
        const from = await succeeded(others);
        await sleep(DOWN_WINDOW_MS);
        return ((await succeeded(others)) - from) / (DOWN_WINDOW_MS / 1000);
      };
      await sleep(1_000);
      const before = await window();
      killed = await killPostmaster(pools[pools.length - 1]!, extra[extra.length - 1]!.server);
      await sleep(1_000);
      const after = await window();
      fault.report({ servers: count, othersBeforePerSecond: before, othersAfterPerSecond: after });
      while ((await unfinished(others)) > 0) await sleep(100);
      draining = false;
      await probing;
      await Promise.all(workers.map((w) => w.shutdown({ graceMs: 2_000 })));
      await Promise.all(running);
      return {
        servers: count,
        runs: backlog,
        seconds: (Date.now() - started) / 1000,
        completionsPerSecond: 0,
        cpuMicrosecondsPerRun: undefined,
        postgresMicrosecondsPerRun: undefined,
        idleCores,
        claimP50Ms: quantile(claims, 0.5),
        claimP99Ms: quantile(claims, 0.99),
        missingFromLog: 0,
      };
    }
    while ((await unfinished(pools)) > 0) await sleep(100);
    const seconds = (Date.now() - started) / 1000;
    await cpu.close(backlog);
    draining = false;
    await probing;
    await Promise.all(workers.map((w) => w.shutdown({ graceMs: 5_000 })));
    await Promise.all(running);
    const perRun = cpu.microsecondsPerRun();
    return {
      servers: count,
      runs: backlog,
      seconds,
      completionsPerSecond: backlog / seconds,
      cpuMicrosecondsPerRun: perRun?.machine,
      postgresMicrosecondsPerRun: perRun?.postgres,
      idleCores,
      claimP50Ms: quantile(claims, 0.5),
      claimP99Ms: quantile(claims, 0.99),
      missingFromLog: backlog - (await completeInLogs(pools)),
    };
  } finally {
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    await Promise.all(slots.map((s) => s.stop().catch(() => undefined)));
    for (const { server: more, db } of extra) {
      await db.drop().catch(() => undefined);
      // A server killed midway has exited already, and its stop would wait for an exit that came before.
      await Promise.race([more.stop().catch(() => undefined), sleep(5_000)]);
    }
    if (killed !== undefined) await rm(killed, { recursive: true, force: true });
    await control.drop();
  }
}

/**
 * A database on a further server; with DATABASE_URL given (no embedded servers) the "server" is the
 * bench's own, and the database a new one on it.
 */
async function scratchOn(more: ScratchServer, bench: BenchServer): Promise<ScratchDatabase> {
  if (!more.embedded) return bench.createDatabase('scheduler_bench_servers_more');
  const url = new URL(more.url);
  url.pathname = '/postgres';
  return { url: url.toString(), waitUntilIdle: async () => true, drop: async () => undefined };
}

async function defineJob(team: ApiClient, name: string): Promise<void> {
  const answer = await team.put(`/v1/jobs/${name}`, {
    queue: QUEUE,
    retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
  });
  if (answer.status !== 201 && answer.status !== 200)
    throw new Error(`job ${name} not defined: ${answer.status} ${JSON.stringify(answer.body)}`);
}

/** `count` runs, round-robin over the jobs: every shard, so every server. */
/**
 * The probe's run completed as the SDK's Worker does: a transient refusal (a shard paused by a move
 * answers 503 until the map places it on its new server) is asked again until the lease ends.
 */
async function completeAsWorkersDo(probe: SchedulerClient, run: LeasedRun): Promise<void> {
  const leaseEnds = Date.parse(run.leaseExpiresAt);
  while (true) {
    try {
      await probe.complete(run.runId, { fencingToken: run.fencingToken, outcome: 'success' });
      return;
    } catch (err) {
      if (!isTransient(err) || Date.now() + PROBE_EVERY_MS >= leaseEnds) return;
      await sleep(PROBE_EVERY_MS);
    }
  }
}

async function enqueue(team: ApiClient, jobs: readonly string[], from: number, count: number): Promise<void> {
  const runs = Array.from({ length: count }, (_, i) => ({ job: jobs[(from + i) % jobs.length]! }));
  const answer = await team.post('/v1/runs:batch', { runs });
  if (answer.status !== 200) throw new Error(`runs:batch answered ${answer.status}`);
}

async function unfinished(pools: readonly Pool[]): Promise<number> {
  const counts = await Promise.all(
    pools.map(async (pool) => {
      const { rows } = await pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM runs WHERE state = ANY($1::text[])',
        [PENDING_RUN_STATES],
      );
      return rows[0]!.n;
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/** Runs whose stream holds RunScheduled, RunLeased and RunSucceeded, over every server's log. */
async function completeInLogs(pools: readonly Pool[]): Promise<number> {
  const counts = await Promise.all(
    pools.map(async (pool) => {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM (
           SELECT stream_key FROM events WHERE es_stream_name(stream_key) LIKE 'run-%'
            GROUP BY stream_key
           HAVING bool_or(event_type = $1) AND bool_or(event_type = $2) AND bool_or(event_type = $3)) s`,
        [RunEventType.RunScheduled, RunEventType.RunLeased, RunEventType.RunSucceeded],
      );
      return rows[0]!.n;
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

function formatReport(
  description: string,
  runs: readonly ServersRun[],
  down: ServerDown | undefined,
  moved: (ShardMoved & { run: ServersRun }) | undefined,
): string {
  const one = runs.find((r) => r.servers === 1);
  const ratio = (value: number | undefined, base: number | undefined): string =>
    value === undefined || base === undefined || base === 0 ? '' : `${(value / base).toFixed(2)}x`;
  // The drain's cost per run less what the idle fleet would have spent over the drain's seconds anyway.
  const busy = (r: ServersRun): number | undefined =>
    r.cpuMicrosecondsPerRun === undefined || r.idleCores === undefined
      ? undefined
      : r.cpuMicrosecondsPerRun - (r.idleCores * r.seconds * 1e6) / r.runs;
  const rows = runs.map((r) => [
    String(r.servers),
    formatCount(r.runs),
    formatCount(Math.round(r.completionsPerSecond)),
    ratio(r.completionsPerSecond, one?.completionsPerSecond),
    r.cpuMicrosecondsPerRun === undefined ? 'n/a' : formatCount(Math.round(r.cpuMicrosecondsPerRun)),
    ratio(r.cpuMicrosecondsPerRun, one?.cpuMicrosecondsPerRun),
    r.postgresMicrosecondsPerRun === undefined ? 'n/a' : formatCount(Math.round(r.postgresMicrosecondsPerRun)),
    r.idleCores === undefined ? 'n/a' : r.idleCores.toFixed(2),
    busy(r) === undefined ? 'n/a' : formatCount(Math.round(busy(r)!)),
    ratio(busy(r), one === undefined ? undefined : busy(one)),
    `${r.claimP50Ms.toFixed(1)} / ${r.claimP99Ms.toFixed(1)}`,
    r.missingFromLog === 0 ? 'yes' : `NO: ${r.missingFromLog} missing`,
  ]);
  return (
    `\nRuns on several PostgreSQL servers of this machine (${description}; the further servers embedded, same settings)\n\n` +
    formatTable([
      [
        'servers',
        'runs',
        'completions/s',
        'vs 1',
        'CPU us/run',
        'vs 1',
        'of it PostgreSQL',
        'idle cores',
        'less idle',
        'vs 1',
        'claim p50 / p99 ms',
        'every run in the logs',
      ],
      ...rows,
    ]) +
    (down === undefined
      ? ''
      : `\nOne of ${down.servers} servers killed midway (SIGQUIT): the others' completions/s ` +
        `${formatCount(Math.round(down.othersBeforePerSecond))} before, ${formatCount(Math.round(down.othersAfterPerSecond))} after ` +
        `(${(down.othersAfterPerSecond / Math.max(down.othersBeforePerSecond, 1)).toFixed(2)}x; target >= 0.8x)\n`) +
    (moved === undefined
      ? ''
      : `\nShard 0 moved to another server midway (chronicle shards move): ${formatCount(moved.movedRuns)} runs, ` +
        `${formatCount(moved.movedEvents)} events, the move ${(moved.tookMs / 1000).toFixed(1)} s, the shard's pause ` +
        `${formatCount(moved.pauseMs)} ms (goal < 5,000); the fleet's completions/s ${formatCount(Math.round(moved.beforePerSecond))} ` +
        `before, ${formatCount(Math.round(moved.duringPerSecond))} during the move; every run once in the logs with all its events: ` +
        `${moved.run.missingFromLog === 0 ? 'yes' : `NO (${moved.run.missingFromLog})`}\n`) +
    '\n'
  );
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs succeeded so far on these servers. */
async function succeeded(pools: readonly Pool[]): Promise<number> {
  const counts = await Promise.all(
    pools.map(async (pool) => {
      const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM runs WHERE state = 'succeeded'");
      return rows[0]!.n;
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/**
 * The embedded server behind `pool` stopped at once: SIGQUIT to its postmaster (postmaster.pid of its data
 * folder). Resolves with the folder the embedded server was made in (its cluster's parent), to delete after.
 * Refused for any other server: a server the bench did not start in a scratch folder of its own is never
 * stopped, nor its folder deleted.
 */
async function killPostmaster(pool: Pool, server: ScratchServer): Promise<string> {
  const { rows } = await pool.query<{ dir: string }>("SELECT current_setting('data_directory') AS dir");
  const made = path.dirname(rows[0]!.dir);
  if (!server.embedded || path.dirname(made) !== path.resolve(tmpdir()) || !path.basename(made).startsWith(SCRATCH))
    throw new Error(`not a scratch server of the bench's, not stopped: ${rows[0]!.dir}`);
  const pid = Number((await readFile(path.join(rows[0]!.dir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  process.kill(pid, 'SIGQUIT');
  await pool.end().catch(() => undefined);
  return path.dirname(rows[0]!.dir);
}
