import { Registry } from 'prom-client';
import { capturedLogger, waitFor } from '@chronicle/testing';
import { PASS_FAILURES_METRIC, PeriodicPass, type PeriodicPassOptions } from './periodic-pass';

/** How long a stopped pass is watched for one more start (the test that none comes): six of its 10 ms intervals. */
const NO_PASS_AFTER_STOP_MS = 60;

async function failuresCounted(registry: Registry, pass: string): Promise<number> {
  const { values } = await registry.getSingleMetric(PASS_FAILURES_METRIC)!.get();
  return values.find((v) => v.labels['pass'] === pass)?.value ?? 0;
}

describe('PeriodicPass', () => {
  const passes: PeriodicPass[] = [];
  afterEach(async () => {
    await Promise.all(passes.map((p) => p.stop()));
    passes.length = 0;
  });

  function periodic(options: Partial<PeriodicPassOptions>, work: () => Promise<void>) {
    const { logger, lines } = capturedLogger();
    const registry = new Registry();
    const pass = new PeriodicPass({ name: 'test', intervalMs: 10, logger, registry, ...options }, work);
    passes.push(pass);
    return { pass, lines, registry };
  }

  it('runs at once and then again and again, one pass at a time', async () => {
    let running = 0;
    let most = 0;
    let done = 0;
    const { pass } = periodic({}, async () => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 15)); // the pass's work
      running--;
      done++;
    });
    pass.start();
    await waitFor(() => done >= 4, { pollMs: 5, description: 'four passes' });
    expect(most).toBe(1);
  });

  it('waits one interval first when told not to run at start', async () => {
    let started = 0;
    const { pass } = periodic({ intervalMs: 200, runAtStart: false }, async () => void started++);
    pass.start();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toBe(0);
    await waitFor(() => started === 1, { pollMs: 5, description: 'the first pass, one interval on' });
  });

  it('logs and counts each failure, backs off while it fails, and returns to its interval once it succeeds', async () => {
    const startedAt: number[] = [];
    let failing = true;
    const { pass, lines, registry } = periodic({ name: 'retention', intervalMs: 20 }, async () => {
      startedAt.push(Date.now());
      if (failing) throw new Error('database unavailable');
    });
    pass.start();
    await waitFor(() => startedAt.length >= 4, { pollMs: 5, description: 'four failed passes' });
    failing = false;
    // Waits after 1, 2, 3 failures in a row: 40, 80, 160 ms, each at least twice the one before it.
    const waits = startedAt.slice(1, 4).map((t, i) => t - startedAt[i]!);
    expect(waits[0]).toBeGreaterThanOrEqual(38);
    expect(waits[1]).toBeGreaterThanOrEqual(78);
    expect(waits[2]).toBeGreaterThanOrEqual(158);
    const failures = lines.filter((line) => line['msg'] === 'retention pass failed');
    expect(failures.length).toBeGreaterThanOrEqual(3);
    expect(failures[0]).toMatchObject({ level: 'error', pass: 'retention', failuresInARow: 1, nextTryMs: 40 });
    expect(await failuresCounted(registry, 'retention')).toBeGreaterThanOrEqual(3);
    // Back to the interval: two passes after a success come within a few intervals, not 320 ms.
    const before = startedAt.length;
    await waitFor(() => startedAt.length >= before + 3, { pollMs: 5, description: 'passes at the interval again' });
    const last = startedAt.slice(-2);
    expect(last[1]! - last[0]!).toBeLessThan(150);
  });

  it('leaves a failure the pass handles itself uncounted, without backoff', async () => {
    let passesRun = 0;
    const { pass, lines, registry } = periodic({ handled: (err) => err instanceof RangeError }, async () => {
      passesRun++;
      throw new RangeError('fenced');
    });
    pass.start();
    await waitFor(() => passesRun >= 5, { pollMs: 5, description: 'five passes at the interval' });
    expect(lines.filter((line) => line['level'] === 'error')).toEqual([]);
    expect(await failuresCounted(registry, 'test')).toBe(0);
  });

  it('stop() waits for the pass under way and starts no other', async () => {
    let finished = false;
    let started = 0;
    const { pass } = periodic({}, async () => {
      started++;
      await new Promise((resolve) => setTimeout(resolve, 50)); // the pass's work
      finished = true;
    });
    pass.start();
    await waitFor(() => started === 1, { pollMs: 5, description: 'the first pass' });
    await pass.stop();
    expect(finished).toBe(true);
    const after = started;
    await new Promise((resolve) => setTimeout(resolve, NO_PASS_AFTER_STOP_MS));
    expect(started).toBe(after);
  });
});
