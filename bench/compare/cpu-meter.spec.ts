import { CpuMeter } from './cpu-meter';

/** Keeps this process's CPU busy until it has spent `ms` of CPU time (however busy the machine is). */
function spin(ms: number): void {
  const from = process.cpuUsage();
  let x = 0;
  while (true) {
    for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + 1);
    const spent = process.cpuUsage(from);
    if ((spent.user + spent.system) / 1000 >= ms) return;
  }
}

describe('CpuMeter', () => {
  it("splits a window's CPU time: what the bench process spent is its share, and the machine's includes it", async () => {
    if (process.platform !== 'linux') return void console.warn('CpuMeter reads /proc: skipped off Linux');
    const meter = new CpuMeter();
    await meter.open();
    spin(300);
    await meter.close(100);
    const shares = meter.microsecondsPerRun()!;
    // 300 ms over 100 runs: 3,000 us a run of the bench's own time; the machine's ticks are 10 ms coarse.
    expect(shares.bench).toBeGreaterThanOrEqual(2_500);
    expect(shares.machine).toBeGreaterThanOrEqual(shares.bench - 200);
    expect(shares.system).toBe(0);
    expect(shares.postgres).toBeGreaterThanOrEqual(0);
  });
});
