import { spawn, type ChildProcess } from 'node:child_process';

const live = new Set<ChildProcess>();
let exitHooked = false;

export interface Child {
  readonly pid: number | undefined;
  /** What the child printed last (stderr and stdout), for an error message. */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * A node child process that is killed when the bench exits, however it
 * exits: a benchmark must not leave servers behind. BENCH_CHILD_NODE_ARGS
 * adds node flags, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it.
 */
export function startNodeChild(script: string, env: Record<string, string>): Child {
  hookExit();
  const nodeArgs = (process.env['BENCH_CHILD_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '');
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let tail = '';
  const keep = (chunk: Buffer): void => void (tail = (tail + chunk.toString()).slice(-4_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));
  return {
    pid: child.pid,
    output: () => tail,
    stop: async (graceMs = 10_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
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
