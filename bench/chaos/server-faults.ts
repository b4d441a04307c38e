import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { answers } from '@chronicle/platform';
import { ChaosRunServers, FAILOVER_SECONDS } from './run-servers';
import type { FaultOutcome, MoveOutcome } from './server-phase-checks';

const CLI = path.resolve(__dirname, '../../apps/cli/src/main.js');
/** How long the server without a standby stays down: it has none to fail over to, so any time will do. */
const SERVER_DOWN_MS = 6_000;
/** The grace, a scheduler node's next look (every second) and the promotion, with room for a busy machine. */
const PROMOTION_DEADLINE_MS = 60_000;
const MOVE_TIMEOUT_MS = 180_000;
/** Tries of the move while the control database does not answer (the chaos restarts it). */
const MOVE_TRIES = 5;
/** How long the control database's restart may take on a busy machine. */
const CONTROL_BACK_MS = 60_000;

export interface ServerFaultsReport {
  readonly killed: FaultOutcome;
  readonly promoted: FaultOutcome;
  readonly moved: MoveOutcome;
  /** The shards of the server with the standby at its kill, and each run stream's last revision on it then. */
  readonly promotedShards: readonly number[];
  readonly committed: ReadonlyMap<string, bigint>;
}

/**
 * The phase of run servers killed, promoted and moved, beside chaos.ts's faults, at fixed points of
 * the load: at a sixth, the server without a standby stopped at once (`pg_ctl stop -m immediate`, its
 * postmaster's SIGQUIT, as a crash) and started again; at five twelfths, the server with the standby
 * killed and left down, until the map places its shards on the standby (a scheduler node promotes it
 * after SHARD_FAILOVER_SECONDS of silence); at three quarters, `chronicle shards move` of `moveShard`
 * to another server that answers (skipped while the CLI has no such command).
 */
export async function injectServerFaults(context: {
  servers: ChaosRunServers;
  startedAt: number;
  end: Date;
  moveShard: number;
  /** Servers never moved to, by name (the control database when its log is a database of its own). */
  moveAvoiding: readonly string[];
  /** The environment the CLI runs in: the control database's DATABASE_URL (and EVENT_STORE_URL). */
  cliEnv: Record<string, string | undefined>;
  say: (line: string) => void;
}): Promise<ServerFaultsReport> {
  const { servers, startedAt, end, say } = context;
  const at = (share: number): Promise<void> => sleep(startedAt + share * (end.getTime() - startedAt) - Date.now());

  await at(1 / 6);
  const killed = await outcome(async () => {
    const stoppedAt = Date.now();
    await servers.killed.stop('immediate');
    say(`run server ${servers.nameOf(servers.killed)} stopped at once; started again in ${SERVER_DOWN_MS / 1000} s`);
    await sleep(SERVER_DOWN_MS);
    await servers.killed.start();
    say(`run server ${servers.nameOf(servers.killed)} is back`);
    return `down ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s`;
  });

  await at(5 / 12);
  let promotedShards: number[] = [];
  let committed = new Map<string, bigint>();
  const promoted = await outcome(async () => {
    const name = servers.nameOf(servers.failing);
    promotedShards = ChaosRunServers.shardsOn(await servers.map(), name);
    committed = await servers.committedOn(servers.failing);
    const stoppedAt = Date.now();
    await servers.failing.stop('immediate');
    say(
      `run server ${name} (shards ${promotedShards.join(', ')}) killed; a scheduler node promotes its standby after ${FAILOVER_SECONDS} s of silence`,
    );
    const standby = servers.nameOf(servers.standby);
    for (const deadline = stoppedAt + PROMOTION_DEADLINE_MS; Date.now() < deadline; await sleep(250)) {
      const map = await servers.map().catch(() => undefined); // the control database may be restarting
      if (map === undefined || promotedShards.some((s) => map.servers[map.placement[s]!]!.name !== standby)) continue;
      say(`the shard map places shards ${promotedShards.join(', ')} on the promoted standby ${standby}`);
      return `shards ${promotedShards.join(', ')} after ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s`;
    }
    throw new Error(`the map does not place the shards on ${standby} ${PROMOTION_DEADLINE_MS / 1000} s after the kill`);
  });

  await at(3 / 4);
  const moved = await moveShard(servers, context.moveShard, context.moveAvoiding, context.cliEnv, say);
  return { killed, promoted, moved, promotedShards, committed };
}

/**
 * `chronicle shards move <shard> <server> --json` to a server of the map other than the shard's that
 * answers (the one killed and back first); "not available" while the CLI does not know the command.
 */
async function moveShard(
  servers: ChaosRunServers,
  shard: number,
  avoiding: readonly string[],
  env: Record<string, string | undefined>,
  say: (line: string) => void,
): Promise<MoveOutcome> {
  try {
    // The control database may be restarting (the chaos's own fault, just before).
    const map = await retrying(() => servers.map(), CONTROL_BACK_MS);
    const from = map.servers[map.placement[shard]!]!.name;
    const preferred = servers.nameOf(servers.killed);
    const others = map.servers
      .filter((s) => s.name !== from && !avoiding.includes(s.name))
      .sort((a, b) => Number(b.name === preferred) - Number(a.name === preferred));
    let to: string | undefined;
    for (const server of others) if (to === undefined && (await answers(server.url))) to = server.name;
    if (to === undefined) return { state: 'failed', why: `no server but ${from} answers` };
    say(`shards move ${shard} ${to} (from ${from})`);
    let ran = await cli(['shards', 'move', String(shard), to, '--json'], env);
    // 3: the database did not answer (the chaos's PostgreSQL restart): tried again.
    for (let tries = 1; ran.code === 3 && tries < MOVE_TRIES; tries++) {
      await sleep(2_000);
      ran = await cli(['shards', 'move', String(shard), to, '--json'], env);
    }
    if (ran.code !== 0 && /unknown command/.test(ran.stderr)) {
      say('shards move: not available');
      return { state: 'not available' };
    }
    if (ran.code !== 0) return { state: 'failed', why: `exit ${ran.code}: ${ran.stderr.trim().slice(0, 300)}` };
    const result = JSON.parse(ran.stdout) as { shard: number; from: string; to: string; pauseMs: number };
    const after = await servers.map();
    const placed = after.servers[after.placement[shard]!]!.name;
    if (placed !== to) return { state: 'failed', why: `moved, says the command, and the map places it on ${placed}` };
    say(`shard ${shard} moved to ${to}, claims paused ${result.pauseMs} ms`);
    return { state: 'moved', figure: `shard ${shard}, ${result.from} to ${result.to}, paused ${result.pauseMs} ms` };
  } catch (err) {
    return { state: 'failed', why: err instanceof Error ? err.message : String(err) };
  }
}

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The built CLI, as `node dist/apps/cli/src/main.js`, with `env` over this process's (undefined: removed). */
function cli(args: readonly string[], env: Record<string, string | undefined>): Promise<Ran> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete childEnv[key];
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: childEnv, timeout: MOVE_TIMEOUT_MS, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr: err !== null && err.killed ? `${stderr}\n(timed out)` : stderr });
      },
    ),
  );
}

/** `work` until it resolves, for `ms` at most: then its last error. */
async function retrying<T>(work: () => Promise<T>, ms: number): Promise<T> {
  for (const deadline = Date.now() + ms; ; await sleep(500))
    try {
      return await work();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
    }
}

async function outcome(fault: () => Promise<string>): Promise<FaultOutcome> {
  try {
    return { done: true, figure: await fault() };
  } catch (err) {
    return { done: false, why: err instanceof Error ? err.message : String(err) };
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
