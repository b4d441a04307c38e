import { readFile } from 'node:fs/promises';
import type { MeasuredWindow } from './scenario';

/** Linux's clock ticks per second for /proc/stat (USER_HZ): 100 on every architecture it runs on today. */
const TICKS_PER_SECOND = 100;

/**
 * The CPU time the whole machine spent during a scenario's measured window, per run: the busy ticks
 * of /proc/stat (user, nice, system, irq, softirq; not idle, iowait or steal) between its edges. Each
 * system runs alone while measured, so this is what a run cost its application, its workers and (a
 * local) PostgreSQL together, far steadier between repetitions than the throughput itself. Machine-wide,
 * like the WAL: anything else running counts too, and a PostgreSQL on another machine does not. Off
 * Linux (no /proc/stat) it reports nothing.
 */
export class CpuMeter implements MeasuredWindow {
  private from: number | undefined;
  private perRun: number | undefined;

  async open(): Promise<void> {
    this.from = await busyTicks();
  }

  async close(runs: number): Promise<void> {
    const to = await busyTicks();
    this.perRun =
      this.from === undefined || to === undefined || runs <= 0
        ? undefined
        : (((to - this.from) / TICKS_PER_SECOND) * 1e6) / runs;
  }

  /** undefined: no window, no run, or no /proc/stat. */
  microsecondsPerRun(): number | undefined {
    return this.perRun;
  }
}

/** The machine's busy clock ticks since boot, all CPUs together; undefined without /proc/stat. */
async function busyTicks(): Promise<number | undefined> {
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
  return user + nice + system + irq + softirq;
}
