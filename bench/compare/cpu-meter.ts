import { readdir, readFile } from 'node:fs/promises';
import type { MeasuredWindow } from './measured-window';

/** Linux's clock ticks per second for /proc/stat (USER_HZ): 100 on every architecture it runs on today. */
const TICKS_PER_SECOND = 100;
const MICROSECONDS_PER_TICK = 1e6 / TICKS_PER_SECOND;

/** Where a window's CPU time went, in µs per run; see CpuMeter. */
export interface CpuShares {
  /** The whole machine. */
  readonly machine: number;
  /** Every PostgreSQL process on this machine (backends, WAL writer, autovacuum, ...). */
  readonly postgres: number;
  /** The system's own processes (our server); 0 for a system that runs inside the bench. */
  readonly system: number;
  /** The bench's process: the producer, the workers, and the peers' clients, which run in it. */
  readonly bench: number;
}

/**
 * The CPU time spent during a scenario's measured window, per run: the
 * machine's busy ticks of /proc/stat (user, nice, system, irq, softirq; not
 * idle, iowait or steal) between its edges, and how much of it was
 * PostgreSQL's, the system's own processes' and the bench's. Each system runs
 * alone while measured, so the machine's figure is what a run cost its
 * application, its workers and (a local) PostgreSQL together, far steadier
 * between repetitions than the throughput itself. Machine-wide, like the
 * WAL: anything else running counts too, and a PostgreSQL on another machine
 * does not. A process that ends inside the window takes its time with it
 * (pools live through the window). Off Linux (no /proc) it reports nothing.
 */
export class CpuMeter implements MeasuredWindow {
  private from: Snapshot | undefined;
  private perRun: CpuShares | undefined;

  /** `systemPids`: the system's own processes at the window's edges (none for the peers). */
  constructor(private readonly systemPids: () => readonly number[] = () => []) {}

  async open(): Promise<void> {
    this.from = await snapshot(this.systemPids());
  }

  async close(runs: number): Promise<void> {
    const to = await snapshot(this.systemPids());
    const from = this.from;
    if (from === undefined || to === undefined || runs <= 0) return;
    const perRun = (microseconds: number): number => microseconds / runs;
    const since = (now: ReadonlyMap<number, number>, then: ReadonlyMap<number, number>): number =>
      [...now].reduce((sum, [pid, ticks]) => sum + ticks - (then.get(pid) ?? 0), 0) * MICROSECONDS_PER_TICK;
    this.perRun = {
      machine: perRun((to.machineTicks - from.machineTicks) * MICROSECONDS_PER_TICK),
      postgres: perRun(since(to.postgres, from.postgres)),
      system: perRun(since(to.system, from.system)),
      bench: perRun(to.benchMicroseconds - from.benchMicroseconds),
    };
  }

  /** undefined: no window, no run, or no /proc. */
  microsecondsPerRun(): CpuShares | undefined {
    return this.perRun;
  }
}

interface Snapshot {
  readonly machineTicks: number;
  /** Ticks by pid. */
  readonly postgres: ReadonlyMap<number, number>;
  readonly system: ReadonlyMap<number, number>;
  readonly benchMicroseconds: number;
}

async function snapshot(systemPids: readonly number[]): Promise<Snapshot | undefined> {
  const stat = await readFile('/proc/stat', 'utf8').catch(() => undefined);
  const fields = stat
    ?.split('\n')
    .find((line) => line.startsWith('cpu '))
    ?.trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  if (fields === undefined || fields.length < 7) return undefined;
  const [user, nice, system, , , irq, softirq] = fields as [number, number, number, number, number, number, number];
  const usage = process.cpuUsage();
  return {
    machineTicks: user + nice + system + irq + softirq,
    postgres: await ticksOf(await postgresPids()),
    system: await ticksOf(systemPids),
    benchMicroseconds: usage.user + usage.system,
  };
}

/** The processes whose command is `postgres`: the server and its children, however it was started. */
async function postgresPids(): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  const named = await Promise.all(
    pids.map(async (pid) =>
      (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim() === 'postgres' ? [Number(pid)] : [],
    ),
  );
  return named.flat();
}

/** utime + stime of each process still there, in ticks. */
async function ticksOf(pids: readonly number[]): Promise<Map<number, number>> {
  const ticks = new Map<number, number>();
  await Promise.all(
    pids.map(async (pid) => {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
      if (stat === undefined) return;
      // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
      const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks.set(pid, Number(after[11]) + Number(after[12]));
    }),
  );
  return ticks;
}
