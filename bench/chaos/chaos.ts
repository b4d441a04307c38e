import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Command, InvalidArgumentError } from 'commander';
import type { Pool } from 'pg';
import { createTeam, type ApiClient } from '@chronicle/e2e-support';
import { createEventStore, type EventStore } from '@chronicle/event-store';
import {
  createPool,
  findFreePort,
  loadConfig,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from '@chronicle/platform';
import { PROJECTIONS, verifyProjections } from '@chronicle/projections';
import { formatTable } from '../table';
import { Slot, type SlotKind } from './fleet';
import { produce } from './producer';
import { reconcile, violations, type ChaosInput, type Execution } from './reconcile';
import { startRoundRobinProxy } from './round-robin-proxy';
import { ChaosRunServers, readEvents } from './run-servers';
import { injectServerFaults } from './server-faults';
import { mergeServerLogs, serverPhaseChecks } from './server-phase-checks';
import { TakeoverMonitor } from './takeover-monitor';

/**
 * `npm run chaos -- --minutes=N`: the whole product under faults, its runs on three PostgreSQL servers
 * (the control database and two of their own, run-servers.ts), then a reconciliation from the servers'
 * event logs (reconcile.ts, server-phase-checks.ts). Loopback only; bounded in time (N minutes of
 * faults, a settling deadline, a hard limit) and in count (the fleet below); stops by itself.
 *
 *   3 nodes of API + scheduler (`npm start` with ROLES=api,scheduler) behind a round-robin proxy,
 *   2 projectors (`npm run start:projector`), 4 SDK worker processes (chaos-worker.ts), a producer of
 *   one-off and delayed runs of a job on each server, 200 cron jobs every minute; SIGKILL of a random
 *   process every few seconds (restarted after), one node SIGSTOPped past its shard lease, one restart
 *   of the control database; a run server killed and started again, one killed for good and its
 *   standby promoted, a shard moved (server-faults.ts).
 */
const DIST = path.resolve(__dirname, '../..');
const SCRIPTS = {
  node: path.join(DIST, 'apps/server/src/main.js'),
  projector: path.join(DIST, 'apps/projector/src/main.js'),
  worker: path.join(__dirname, 'chaos-worker.js'),
};
const ADMIN_TOKEN = 'chaos-admin-token-0123456789abcdef';
const TEAM = 'chaos';
const QUEUE = 'chaos';
/** One-off and delayed runs go to a job on each run server (run-servers.ts); one of their shards is moved. */
const TASK_JOB_PREFIX = 'chaos.task';
const CRON_JOBS = 200;
const COUNTS = { node: 3, projector: 2, worker: 4 } as const;
const RETRY = { maxAttempts: 5, baseSeconds: 1, maxSeconds: 4 };
const PRODUCER_RATE = 6;
const KILL_EVERY_MS = [3_000, 8_000] as const;
const RESTART_AFTER_MS = [500, 3_000] as const;
const SETTLE_MS = 4 * 60_000;
const POSTGRES_DOWN_MS = 2_000;
/** Past the 10 s of silence after which a waiting projector takes over from the active one. */
const PROJECTOR_STOP_MS = 15_000;
const MINUTE_MS = 60_000;

interface Options {
  readonly minutes: number;
  readonly split: boolean;
  readonly pgRestart: string | undefined;
  readonly keep: boolean;
}

async function main(): Promise<number> {
  const options = new Command('chaos')
    .description('the product under faults, reconciled from its event log')
    .option('--minutes <n>', 'minutes of faults and load (1-120)', wholeMinutes, 3)
    .option('--split', 'the event log in a database of its own (EVENT_STORE_URL)', false)
    .option(
      '--pg-restart <command>',
      "with DATABASE_URL: the shell command that restarts that server (e.g. 'pg_ctlcluster 15 main restart -m fast')",
    )
    .option('--keep', 'keep the work folder (processes’ logs, executions) even when nothing is violated', false)
    .parse()
    .opts<Options>();
  const limitMs = options.minutes * MINUTE_MS + SETTLE_MS + 10 * MINUTE_MS;
  setTimeout(() => {
    process.stderr.write(`chaos: over the time limit of ${Math.round(limitMs / MINUTE_MS)} min, giving up\n`);
    process.exit(2);
  }, limitMs).unref();

  const work = await mkdtemp(path.join(tmpdir(), 'chronicle-chaos-'));
  await chmod(work, 0o755);
  const say = (line: string): void => void process.stderr.write(`chaos: ${line}\n`);
  const server = await openServer(work, options, say);
  let failed = true;
  const slots: Slot[] = [];
  let runServers: ChaosRunServers | undefined;
  try {
    runServers = await ChaosRunServers.start(server.url, loadConfig({}).shards);
    say(`runs on ${runServers.describe()}`);
    const checks = await runChaos(server, runServers, options, work, slots, say);
    process.stdout.write(
      formatTable([['check', 'figure', 'holds'], ...checks.map((c) => [c.name, c.value, c.violated ? 'NO' : 'yes'])]),
    );
    for (const check of violations(checks))
      for (const example of check.examples) process.stdout.write(`  ${check.name}: ${example}\n`);
    failed = violations(checks).length > 0;
    return failed ? 1 : 0;
  } finally {
    await Promise.all(slots.map((slot) => slot.stop().catch(() => undefined)));
    if (runServers !== undefined && (failed || options.keep)) await runServers.keepLogs(work);
    await runServers?.close();
    await server.close();
    if (failed || options.keep) say(`logs and executions kept in ${work}`);
    else await rm(work, { recursive: true, force: true });
  }
}

interface ChaosServer {
  readonly url: string;
  readonly logUrl: string;
  /** Restarts PostgreSQL, or says why it cannot. */
  restart(): Promise<{ done: true } | { done: false; why: string }>;
  close(): Promise<void>;
}

/** DATABASE_URL's server (scratch databases on it), or an embedded one of its own that it can restart. */
async function openServer(work: string, options: Options, say: (line: string) => void): Promise<ChaosServer> {
  const given = process.env['DATABASE_URL'];
  let adminUrl: string;
  let restart: ChaosServer['restart'];
  let stopServer = async (): Promise<void> => undefined;
  if (given !== undefined && given !== '') {
    adminUrl = given;
    restart = async () => {
      if (options.pgRestart === undefined) return { done: false, why: 'DATABASE_URL without --pg-restart' };
      await promisify(execFile)('sh', ['-c', options.pgRestart]);
      return { done: true };
    };
  } else {
    const dataDir = path.join(work, 'pg');
    const port = await findFreePort();
    let embedded: EmbeddedPostgres | undefined = await startEmbeddedPostgres({ dataDir, port });
    adminUrl = embedded.connectionString;
    say(`embedded PostgreSQL on port ${port}`);
    restart = async () => {
      await embedded?.stop();
      embedded = undefined;
      await new Promise((resolve) => setTimeout(resolve, POSTGRES_DOWN_MS));
      embedded = await startEmbeddedPostgres({ dataDir, port });
      return { done: true };
    };
    stopServer = async () => void (await embedded?.stop());
  }
  const stamp = Date.now().toString(36);
  const admin = createPool({ connectionString: adminUrl, max: 1, applicationName: 'chaos-admin' });
  const created = [`chaos_${stamp}`, ...(options.split ? [`chaos_${stamp}_log`] : [])];
  for (const name of created) await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const urlOf = (name: string): string => Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
  return {
    url: urlOf(created[0]!),
    logUrl: urlOf(created[created.length - 1]!),
    restart,
    close: async () => {
      const pool = createPool({ connectionString: adminUrl, max: 1, applicationName: 'chaos-admin' });
      for (const name of created)
        await pool.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await pool.end();
      await stopServer();
    },
  };
}

async function runChaos(
  server: ChaosServer,
  runServers: ChaosRunServers,
  options: Options,
  work: string,
  slots: Slot[],
  say: (line: string) => void,
): Promise<ReturnType<typeof reconcile>> {
  const common: Record<string, string> = {
    DATABASE_URL: server.url,
    ...(server.logUrl === server.url ? {} : { EVENT_STORE_URL: server.logUrl }),
    SCHEDULER_ADMIN_TOKEN: ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    PG_POOL_SIZE: '6',
    ...runServers.env,
  };
  const slot = async (kind: SlotKind, i: number, env: Record<string, string> = {}): Promise<Slot> => {
    const s = new Slot({
      kind,
      name: `${kind}-${i + 1}`,
      script: SCRIPTS[kind],
      env: { ...common, ...env },
      port: kind === 'worker' ? undefined : await findFreePort(),
      logDir: work,
    });
    slots.push(s);
    return s;
  };
  const nodes = await Promise.all(
    Array.from({ length: COUNTS.node }, (_, i) => slot('node', i, { ROLES: 'api,scheduler' })),
  );
  // At info, a projector says when it is the active one: the fault of stopping one picks that one.
  const projectors = await Promise.all(
    Array.from({ length: COUNTS.projector }, (_, i) => slot('projector', i, { LOG_LEVEL: 'info' })),
  );
  // The first migrates the databases; the others find them migrated.
  await nodes[0]!.start();
  await Promise.all([...nodes.slice(1), ...projectors].map((s) => s.start()));
  const proxy = await startRoundRobinProxy(() => nodes.filter((n) => n.state === 'up').map((n) => n.spec.port!));
  const baseUrl = `http://127.0.0.1:${proxy.port}`;
  say(`${nodes.length} nodes and ${projectors.length} projectors up, behind ${baseUrl}`);

  const clients = await createTeam(baseUrl, ADMIN_TOKEN, TEAM, [QUEUE]);
  const taskJobs = [0, 1, 2].map((server) => runServers.jobOnServer(server, TASK_JOB_PREFIX));
  for (const job of taskJobs) await defineJob(clients.team, job, {});
  const cronJobs = Array.from({ length: CRON_JOBS }, (_, i) => `chaos.cron-${String(i).padStart(3, '0')}`);
  for (const job of cronJobs)
    await defineJob(clients.team, job, { schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 0 } });
  const cronFrom = new Date(Math.ceil((Date.now() + 1) / MINUTE_MS) * MINUTE_MS);
  const workers = await Promise.all(
    Array.from({ length: COUNTS.worker }, (_, i) =>
      slot('worker', i, {
        SCHEDULER_URL: baseUrl,
        SCHEDULER_TOKEN: clients.workerToken,
        QUEUE,
        EXECUTIONS_FILE: path.join(work, `executions-${i + 1}.jsonl`),
      }),
    ),
  );
  await Promise.all(workers.map((w) => w.start()));

  const observer = createPool({ connectionString: server.url, max: 2, applicationName: 'chaos-observer' });
  const monitor = new TakeoverMonitor(observer);
  await monitor.start();
  const end = new Date(Date.now() + options.minutes * MINUTE_MS);
  say(`${CRON_JOBS} cron jobs from ${cronFrom.toISOString()}; faults and load until ${end.toISOString()}`);

  const stopLoad = new AbortController();
  const producing = produce({
    baseUrl,
    token: clients.teamToken,
    jobs: taskJobs,
    rate: PRODUCER_RATE,
    signal: stopLoad.signal,
  });
  const serverFaults = injectServerFaults({
    servers: runServers,
    startedAt: Date.now(),
    end,
    // A shard moves between servers whose log is in the runs' database: with --split, not to or from the
    // control database.
    moveShard: runServers.shardOfJob(taskJobs[options.split ? 1 : 0]!),
    moveAvoiding: options.split ? [runServers.nameOf(server.url)] : [],
    cliEnv: { DATABASE_URL: server.url, EVENT_STORE_URL: server.logUrl === server.url ? undefined : server.logUrl },
    say,
  });
  const faults = await injectFaults({ slots, nodes, server, monitor, end, say });
  const serverPhase = await serverFaults;
  stopLoad.abort();
  const produced = await producing;
  say(
    `load stopped: ${produced.enqueues.length} enqueues sent, ${produced.retried} calls retried ` +
      `(by status: ${JSON.stringify(produced.retriedByStatus)}), ${faults.kills} kills, ` +
      `${faults.crashes} exits by themselves; settling`,
  );
  for (const line of produced.unanswered.slice(0, 5)) say(`never answered: ${line}`);

  await settle(runServers, end, say);
  await monitor.stop();
  // Writers stop (drained), the projectors finish the logs: then the rebuild is compared.
  await Promise.all([...nodes, ...workers].map((s) => s.stop()));
  const { map, logs } = await runServers.readLogs(() => withLogStore(server, observer, readEvents));
  const merged = mergeServerLogs(logs, (streamId) => ChaosRunServers.holderOf(map, runServers.shards, streamId));
  const events = merged.events;
  say(
    `${events.length} events in the logs of ${logs.map((l) => `${l.server} (${l.events.length})`).join(', ')}; ` +
      'comparing the read models with a rebuild',
  );
  const rebuildDifferences = [
    ...(await compareWithRebuild(server, observer)),
    ...(await withLogStore(server, observer, (store) => runServers.compareWithRebuild(store))),
  ];
  await Promise.all(projectors.map((s) => s.stop()));
  await observer.end();
  await proxy.close();

  const input: ChaosInput = {
    events,
    end,
    cron: { jobs: cronJobs, from: cronFrom },
    executions: await readExecutions(work),
    enqueues: produced.enqueues,
    takeovers: monitor.takeovers,
    takeoversMissing: monitor.missing,
    rebuildDifferences,
    postgresRestart: faults.postgresRestart,
    faults: { kills: faults.kills, stops: faults.stops },
  };
  const checks = reconcile(input);
  const promotedShards = new Set(serverPhase.promotedShards);
  return [
    ...checks,
    ...serverPhaseChecks({
      merged,
      killed: serverPhase.killed,
      promoted: serverPhase.promoted,
      moved: serverPhase.moved,
      promotedRuns: {
        acknowledged: produced.enqueues
          .flatMap((e) => [...new Set(e.runIds)])
          .filter((runId) => promotedShards.has(runServers.shardOfRun(runId) ?? -1)),
        committed: serverPhase.committed,
      },
    }),
    {
      name: 'projector stopped 15 s / taken over from a silent one',
      value: `${faults.projectorStops} / ${await countInLogs(work, 'projector-', 'the active projector was silent')}`,
      violated: false,
      examples: [],
    },
    {
      name: 'processes that exited by themselves (restarted)',
      value: String(faults.crashes),
      violated: false,
      examples: [],
    },
    {
      name: 'enqueues refused (4xx)',
      value: String(produced.refused.length),
      violated: produced.refused.length > 0,
      examples: produced.refused.slice(0, 5),
    },
  ];
}

async function defineJob(team: ApiClient, name: string, extra: Record<string, unknown>): Promise<void> {
  const answer = await team.put(`/v1/jobs/${name}`, { queue: QUEUE, retry: RETRY, timeoutSeconds: 60, ...extra });
  if (answer.status !== 201 && answer.status !== 200)
    throw new Error(`job ${name} not defined: ${answer.status} ${JSON.stringify(answer.body)}`);
}

interface FaultReport {
  kills: number;
  stops: number;
  projectorStops: number;
  crashes: number;
  postgresRestart: ChaosInput['postgresRestart'];
}

/**
 * Until `end`: a random process SIGKILLed every few seconds and restarted a moment later; at a third
 * of the way, one node SIGSTOPped for its shard lease and 5 s more; half way, a projector SIGSTOPped
 * for 15 s (the active one is taken over from after 10 s of silence); at two thirds, PostgreSQL
 * restarted. A process that exits by itself is restarted too, and counted.
 */
async function injectFaults(context: {
  slots: readonly Slot[];
  nodes: readonly Slot[];
  server: ChaosServer;
  monitor: TakeoverMonitor;
  end: Date;
  say: (line: string) => void;
}): Promise<FaultReport> {
  const { slots, nodes, server, monitor, end, say } = context;
  const report: FaultReport = {
    kills: 0,
    stops: 0,
    projectorStops: 0,
    crashes: 0,
    postgresRestart: { done: false, why: 'not reached' },
  };
  const startedAt = Date.now();
  const span = end.getTime() - startedAt;
  const leaseMs = loadConfig({}).shardLeaseSeconds * 1000;
  const background: Array<Promise<void>> = [];
  const restarting = new Set<Slot>();
  const restartLater = (s: Slot, afterMs: number): void => {
    restarting.add(s);
    background.push(
      (async () => {
        await sleep(afterMs);
        for (let tries = 0; ; tries++)
          try {
            await s.start();
            break;
          } catch (err) {
            // PostgreSQL may be restarting: a supervisor tries again.
            if (tries >= 10) throw err;
            await s.kill();
            await sleep(2_000);
          }
        restarting.delete(s);
      })(),
    );
  };
  let stopDone = false;
  let projectorStopDone = false;
  let restartDone = false;
  let nextKill = startedAt + between(KILL_EVERY_MS);
  while (Date.now() < end.getTime()) {
    await sleep(100);
    for (const s of slots) {
      const output = restarting.has(s) ? undefined : s.crashed();
      if (output === undefined) continue;
      report.crashes++;
      say(`${s.name} exited by itself; restarting. It printed: ${output.slice(-500)}`);
      s.state = 'down';
      restartLater(s, 500);
    }
    const elapsed = Date.now() - startedAt;
    if (!stopDone && elapsed > span / 3) {
      // A node that holds shards (one that holds none would time no takeover); else again at the next tick.
      const victim = pick(nodes.filter((n) => n.state === 'up' && !restarting.has(n) && monitor.heldBy(n.pid!) > 0));
      if (victim !== undefined) {
        stopDone = true;
        const shards = monitor.ownerDown(victim.pid!, 'stopped');
        victim.pause();
        report.stops++;
        say(`SIGSTOP ${victim.name} (pid ${victim.pid}, ${shards} shards) for ${(leaseMs + 5_000) / 1000} s`);
        background.push(
          (async () => {
            await sleep(leaseMs + 5_000);
            victim.resume();
            say(`SIGCONT ${victim.name}`);
          })(),
        );
      }
    }
    if (!projectorStopDone && elapsed > span / 2) {
      const candidates = slots.filter((s) => s.kind === 'projector' && s.state === 'up' && !restarting.has(s));
      const victim = (await activeProjector(candidates)) ?? pick(candidates);
      // Both may be restarting (killed, or refused to start while a run server was down): again at the next tick.
      if (victim !== undefined) {
        projectorStopDone = true;
        victim.pause();
        report.projectorStops++;
        say(`SIGSTOP ${victim.name} (pid ${victim.pid}) for ${PROJECTOR_STOP_MS / 1000} s`);
        background.push(
          (async () => {
            await sleep(PROJECTOR_STOP_MS);
            victim.resume();
            say(`SIGCONT ${victim.name}`);
          })(),
        );
      }
    }
    if (!restartDone && elapsed > (2 * span) / 3) {
      restartDone = true;
      say('restarting PostgreSQL');
      report.postgresRestart = await server.restart().catch((err: unknown) => ({
        done: false as const,
        why: `the restart failed: ${err instanceof Error ? err.message : String(err)}`,
      }));
      say(
        report.postgresRestart.done ? 'PostgreSQL is back' : `PostgreSQL not restarted: ${report.postgresRestart.why}`,
      );
    }
    if (Date.now() >= nextKill) {
      nextKill = Date.now() + between(KILL_EVERY_MS);
      const victim = pick(slots.filter((s) => s.state === 'up' && !restarting.has(s)));
      if (victim === undefined) continue;
      const shards = victim.kind === 'node' ? monitor.ownerDown(victim.pid!, 'killed') : 0;
      await victim.kill();
      report.kills++;
      say(`SIGKILL ${victim.name} (pid ${victim.pid}${victim.kind === 'node' ? `, ${shards} shards` : ''})`);
      restartLater(victim, between(RESTART_AFTER_MS));
    }
  }
  await Promise.all(background);
  return report;
}

/** Until no run due before `end` is still waiting or leased in the read models of the servers, or the deadline. */
async function settle(runServers: ChaosRunServers, end: Date, say: (line: string) => void): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  let open = -1;
  while (Date.now() < deadline) {
    open = await runServers.pendingRunsDue(end);
    if (open === 0) return say('every run due before the end is over in the read models');
    await sleep(500);
  }
  say(`settling gave up with ${open} runs due before the end not over`);
}

/** The run's event store, as its processes configure it (the log in the read models' database or its own). */
async function withLogStore<T>(
  server: ChaosServer,
  readModels: Pool,
  work: (store: EventStore) => Promise<T>,
): Promise<T> {
  const config = loadConfig({
    DATABASE_URL: server.url,
    ...(server.logUrl === server.url ? {} : { EVENT_STORE_URL: server.logUrl }),
  });
  const store = await createEventStore(config, readModels);
  try {
    return await work(store);
  } finally {
    if (server.logUrl !== server.url) await store.close();
  }
}

function compareWithRebuild(server: ChaosServer, readModels: Pool): Promise<string[]> {
  return withLogStore(server, readModels, async (store) => {
    const report = await verifyProjections(store, readModels, PROJECTIONS);
    return report.differences.map((d) => `control database: ${JSON.stringify(d).slice(0, 300)}`);
  });
}

async function readExecutions(work: string): Promise<Execution[]> {
  const files = (await readdir(work)).filter((f) => f.startsWith('executions-'));
  const lines = (await Promise.all(files.map((f) => readFile(path.join(work, f), 'utf8')))).flatMap((t) =>
    t.split('\n'),
  );
  // A line cut short by a SIGKILL mid-write is not an execution that began.
  return lines.flatMap((line) => {
    try {
      return line === '' ? [] : [JSON.parse(line) as Execution];
    } catch {
      return [];
    }
  });
}

/**
 * The projector whose current process says, last, that its projections are active in it (its log at
 * info), not that a batch failed since.
 */
async function activeProjector(projectors: readonly Slot[]): Promise<Slot | undefined> {
  for (const slot of projectors) {
    const log = await readFile(path.join(slot.spec.logDir!, `${slot.name}.log`), 'utf8').catch(() => '');
    const mine = log.split('\n').filter((line) => line.includes(`"pid":${slot.pid},`));
    const last = (text: string): number => mine.map((line) => line.includes(text)).lastIndexOf(true);
    const active = last('projections active in this process');
    const failed = last('projection batch failed');
    if (active >= 0 && active > failed) return slot;
  }
  return undefined;
}

/** Lines saying `text` in the logs of the processes whose names begin with `prefix`. */
async function countInLogs(work: string, prefix: string, text: string): Promise<number> {
  const files = (await readdir(work)).filter((f) => f.startsWith(prefix) && f.endsWith('.log'));
  const logs = await Promise.all(files.map((f) => readFile(path.join(work, f), 'utf8')));
  return logs.reduce((n, log) => n + log.split('\n').filter((line) => line.includes(text)).length, 0);
}

function wholeMinutes(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 120) throw new InvalidArgumentError('a whole number from 1 to 120');
  return n;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const between = ([low, high]: readonly [number, number]): number => low + Math.random() * (high - low);
const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(Math.random() * items.length)];

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`chaos: failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
