import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';

const live = new Set<ChildProcess>();
let exitHooked = false;

export interface Child {
  readonly pid: number | undefined;
  /** What the child printed last (stderr and stdout), for an error message. */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
  /** Sends it a signal (SIGKILL, SIGSTOP, SIGCONT, ...) if it is still running. */
  signal(signal: NodeJS.Signals): void;
  /** Resolves once it has exited, however. */
  readonly exited: Promise<void>;
  hasExited(): boolean;
}

/**
 * A node child process that is killed when the bench exits, however it
 * exits: a benchmark must not leave servers behind. BENCH_CHILD_NODE_ARGS
 * adds node flags, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it, after the caller's
 * `nodeArgs`. With `logFile`, all it prints is appended there too.
 */
export function startNodeChild(
  script: string,
  env: Record<string, string>,
  logFile?: string,
  nodeArgs: readonly string[] = [],
): Child {
  hookExit();
  const extraArgs = (process.env['BENCH_CHILD_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '');
  const child = spawn(process.execPath, [...nodeArgs, ...extraArgs, script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let tail = '';
  const keep = (chunk: Buffer): void => void (tail = (tail + chunk.toString()).slice(-4_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  if (logFile !== undefined) {
    const log = createWriteStream(logFile, { flags: 'a' });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    child.once('close', () => log.end());
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));
  const hasExited = (): boolean => child.exitCode !== null || child.signalCode !== null;
  return {
    pid: child.pid,
    output: () => tail,
    exited,
    hasExited,
    signal: (signal) => {
      if (!hasExited()) child.kill(signal);
    },
    stop: async (graceMs = 10_000) => {
      if (hasExited()) return;
      child.kill('SIGCONT'); // a stopped child cannot act on SIGTERM
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  // 'exit' runs synchronously: a kill is all there is time for.
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`bench: ${signal}, stopping child processes\n`);
      process.exit(130);
    });
  }
}
