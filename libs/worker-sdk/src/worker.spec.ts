import { setTimeout as delay } from 'node:timers/promises';
import { NonRetryableError, RetryLaterError, StaleLeaseError } from './errors';
import { GracePeriodOverError } from './run-execution';
import { SchedulerClient } from './scheduler-client';
import { FakeSchedulerServer } from './testing/fake-scheduler-server';
import { gate, recordingLogger, waitFor } from './testing/wait-for';
import { Worker } from './worker';
import type { WorkerOptions } from './worker-options';

describe('Worker against a scheduler over HTTP', () => {
  let server: FakeSchedulerServer;
  let logger: ReturnType<typeof recordingLogger>;
  let workers: Worker[];

  beforeEach(async () => {
    server = await FakeSchedulerServer.start();
    logger = recordingLogger();
    workers = [];
  });

  afterEach(async () => {
    await Promise.all(workers.map((worker) => worker.shutdown({ graceMs: 0 })));
    await server.close();
  });

  function startWorker(options: Partial<WorkerOptions> & Pick<WorkerOptions, 'handler'>): {
    worker: Worker;
    running: Promise<void>;
  } {
    const client = new SchedulerClient({ baseUrl: server.baseUrl, token: server.token });
    const worker = new Worker({ client, queues: ['billing'], logger, ...options });
    workers.push(worker);
    return { worker, running: worker.run() };
  }

  const completed = (): number => server.callsOf('complete').filter((call) => call.status === 200).length;
  const logged = (message: string, runId: string) => (): boolean =>
    logger.entries.some((entry) => entry.message.startsWith(message) && entry.fields['runId'] === runId);

  it('sends the completions of runs that finish together in one call, and one alone in a call of its own', async () => {
    const runs = Array.from({ length: 20 }, () => server.enqueue());
    startWorker({ concurrency: 20, handler: async () => undefined });
    await waitFor(() => completed() === 20, { description: '20 completions' });
    expect(runs.every((run) => server.callsOf('complete', run.runId).length === 1)).toBe(true);
    // One lease brought all 20; their handlers finish in the same turn, so very few calls carry them.
    expect(server.completeManyCalls).toBeGreaterThanOrEqual(1);
    expect(server.completeManyCalls).toBeLessThanOrEqual(3);
    const late = server.enqueue();
    await waitFor(() => server.callsOf('complete', late.runId).length === 1, { description: 'the 21st completion' });
  });

  it('completes every queued run exactly once, with the outcome, error, retryable flag and retry wait of its handler', async () => {
    const modes = ['ok', 'fails', 'malformed', 'later'] as const;
    const runs = Array.from({ length: 12 }, (_, n) => server.enqueue({ payload: { n, mode: modes[n % 4] } }));
    const handled: string[] = [];
    startWorker({
      concurrency: 4,
      handler: async (run) => {
        handled.push(run.runId);
        const { n, mode } = run.payload as { n: number; mode: (typeof modes)[number] };
        if (mode === 'fails') throw new Error(`export ${n} timed out`);
        if (mode === 'malformed') throw new NonRetryableError(`invoice ${n} is malformed`);
        if (mode === 'later') throw new RetryLaterError(`the ERP said 429 for ${n}`, 59.2);
      },
    });

    await waitFor(() => completed() === 12, { description: '12 completions' });
    expect([...handled].sort()).toEqual(runs.map((run) => run.runId).sort());
    runs.forEach((run, n) => {
      const bodies = server.callsOf('complete', run.runId).map((call) => call.body);
      const expected = [
        { fencingToken: run.fencingToken, outcome: 'success' },
        { fencingToken: run.fencingToken, outcome: 'failure', error: `export ${n} timed out`, retryable: true },
        { fencingToken: run.fencingToken, outcome: 'failure', error: `invoice ${n} is malformed`, retryable: false },
        {
          fencingToken: run.fencingToken,
          outcome: 'failure',
          error: `the ERP said 429 for ${n}`,
          retryable: true,
          retryAfterSeconds: 60,
        },
      ][n % 4];
      expect(bodies).toStrictEqual([expected]);
    });
  });

  it('gives the handler the run payload, idempotency key, fencing token and attempt', async () => {
    const run = server.enqueue({
      idempotencyKey: 'billing.export@2026-03-15T02:00:00+01:00',
      attempt: 2,
      payload: { format: 'csv' },
    });
    let seen: Record<string, unknown> | undefined;
    startWorker({
      handler: async (leased, context) => {
        seen = {
          runId: leased.runId,
          job: leased.job,
          payload: leased.payload,
          idempotencyKey: context.idempotencyKey,
          fencingToken: context.fencingToken,
          attempt: context.attempt,
        };
      },
    });

    await waitFor(() => seen !== undefined, { description: 'the handler' });
    expect(seen).toEqual({
      runId: run.runId,
      job: 'billing.export',
      payload: { format: 'csv' },
      idempotencyKey: 'billing.export@2026-03-15T02:00:00+01:00',
      fencingToken: run.fencingToken,
      attempt: 2,
    });
    expect(run.fencingToken).toBeGreaterThan(0);
  });

  it("tells the handler whether the run's job is in dry run", async () => {
    const dry = server.enqueue({ dryRun: true });
    const live = server.enqueue();
    const seen = new Map<string, boolean>();
    startWorker({
      handler: async (leased, context) => {
        seen.set(leased.runId, context.dryRun);
      },
    });

    await waitFor(() => seen.size === 2, { description: 'both runs handled' });
    expect(Object.fromEntries(seen)).toEqual({ [dry.runId]: true, [live.runId]: false });
  });

  it('never runs more than `concurrency` handlers at once and leases only for free slots', async () => {
    for (let n = 0; n < 10; n += 1) server.enqueue();
    let running = 0;
    let peak = 0;
    startWorker({
      concurrency: 3,
      handler: async () => {
        running += 1;
        peak = Math.max(peak, running);
        await delay(30); // the work
        running -= 1;
      },
    });

    await waitFor(() => completed() === 10, { description: '10 completions' });
    expect(peak).toBe(3);
    const leaseCalls = server.callsOf('lease');
    expect(leaseCalls[0]!.body['max']).toBe(3);
    // The server's count of unfinished leases is a lower bound of the worker's runs in flight: handlers
    // running, and completions on their way (as many again at most).
    for (const call of leaseCalls) expect(Number(call.body['max']) + call.outstanding).toBeLessThanOrEqual(6);
  });

  it('frees a slot when the handler returns: the completion call going out leases the next runs for it', async () => {
    for (let n = 0; n < 10; n += 1) server.enqueue();
    server.holdCompletions();
    let started = 0;
    startWorker({ concurrency: 2, handler: async () => void (started += 1) });

    // Two handlers done, their completion unanswered: that very call asks for the two free slots.
    await waitFor(
      () => server.calls.some((c) => c.kind === 'complete' && (c.body['lease'] as { max?: number })?.max === 2),
      { description: 'a completion call that leases two runs' },
    );
    expect(started).toBe(2);
    server.releaseCompletions();
    await waitFor(() => completed() === 10, { description: '10 completions' });
    // Never more asked for than the slots free while completions were owed (the server's leased runs).
    for (const call of server.callsOf('lease'))
      expect(Number(call.body['max']) + call.outstanding).toBeLessThanOrEqual(4);
  });

  // The first batch by a lease call; each later one came back with the completions of the one before,
  // a full batch (100 finishing in one turn) as much as a small one.
  it.each([
    { runs: 10, concurrency: 5, withCompletions: 5, completeCalls: 2 },
    { runs: 300, concurrency: 100, withCompletions: 200, completeCalls: 3 },
  ])(
    'leases its next runs with its completions, one call for both ($runs runs, concurrency $concurrency)',
    async ({ runs, concurrency, withCompletions, completeCalls }) => {
      for (let n = 0; n < runs; n += 1) server.enqueue();
      startWorker({ concurrency, handler: async () => undefined });

      await waitFor(() => completed() === runs, { description: `${runs} completions` });
      expect(server.leasedWithCompletions).toBe(withCompletions);
      expect(server.completeManyCalls).toBe(completeCalls);
    },
  );

  it('starts a run leased ahead of its due time (prefetchMs) at its notBefore, not before', async () => {
    const dueAtMs = Date.now() + 400;
    server.enqueue({ dueAtMs });
    let startedAt = 0;
    startWorker({ prefetchMs: 1000, handler: async () => void (startedAt = Date.now()) });
    await waitFor(() => completed() === 1, { description: 'the prefetched run completed' });
    const [lease] = server.callsOf('lease');
    expect(lease?.body['prefetchMs']).toBe(1000);
    // Leased ahead of its time, started at it.
    expect(lease!.at).toBeLessThan(dueAtMs);
    expect(startedAt).toBeGreaterThanOrEqual(dueAtMs);
  });

  it('starts runs due at one instant together, and never one that shutdown gave up before its notBefore', async () => {
    const dueAtMs = Date.now() + 300;
    const kept = Array.from({ length: 3 }, () => server.enqueue({ dueAtMs }));
    const startedAt = new Map<string, number>();
    const order: string[] = [];
    startWorker({
      prefetchMs: 1000,
      concurrency: 3,
      handler: async (run) => {
        startedAt.set(run.runId, Date.now());
        order.push('start');
        queueMicrotask(() => order.push('microtask'));
      },
    });
    const left = server.enqueue({ dueAtMs, queue: 'reports' });
    const leaving = startWorker({
      queues: ['reports'],
      prefetchMs: 1000,
      handler: async (run) => void startedAt.set(run.runId, Date.now()),
    });
    await waitFor(() => server.runs.get(left.runId)?.state === 'leased', { description: 'the reports run leased' });
    await leaving.worker.shutdown({ graceMs: 0 });
    await waitFor(() => completed() === 3, { description: 'the billing runs completed' });
    expect(Math.min(...kept.map((run) => startedAt.get(run.runId)!))).toBeGreaterThanOrEqual(dueAtMs);
    // In one turn of the event loop: no microtask ran between the three starts.
    expect(order.slice(0, 3)).toEqual(['start', 'start', 'start']);
    await waitFor(() => Date.now() > dueAtMs + 100, { description: 'past the due time' });
    expect(startedAt.has(left.runId)).toBe(false);
    expect(server.callsOf('complete', left.runId)).toEqual([]);
  });

  it('refuses a prefetch window over 2 s, and sends none unless asked', async () => {
    expect(() => startWorker({ prefetchMs: 2001, handler: async () => undefined })).toThrow(RangeError);
    server.enqueue();
    startWorker({ handler: async () => undefined });
    await waitFor(() => completed() === 1, { description: 'the run completed' });
    expect(server.callsOf('lease')[0]?.body).not.toHaveProperty('prefetchMs');
  });

  it('asks for at most 100 runs per lease call, whatever the concurrency', async () => {
    for (let n = 0; n < 150; n += 1) server.enqueue();
    startWorker({ concurrency: 250, handler: async () => undefined });

    await waitFor(() => completed() === 150, { description: '150 completions' });
    const asked = server.callsOf('lease').map((call) => call.body['max']);
    expect(asked[0]).toBe(100);
    expect(asked.every((max) => Number(max) <= 100)).toBe(true);
  });

  it('heartbeats about every third of the lease while a slow handler works, so the lease never lapses', async () => {
    const run = server.enqueue();
    startWorker({
      leaseSeconds: 0.45,
      handler: () => waitFor(() => server.callsOf('heartbeat', run.runId).length >= 3, { description: '3 heartbeats' }),
    });

    await waitFor(() => completed() === 1, { description: 'the completion' });
    const beats = server.callsOf('heartbeat', run.runId);
    const times = [server.callsOf('lease')[0]!.at, ...beats.map((beat) => beat.at)];
    const gaps = times.slice(1).map((at, i) => at - times[i]!);
    // A third of 450 ms, give or take; well inside the lease either way.
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(110);
    for (const gap of gaps) expect(gap).toBeLessThan(340);
    expect(beats.map((beat) => [beat.status, beat.body])).toEqual(
      beats.map(() => [200, { fencingToken: run.fencingToken, leaseSeconds: 0.45 }]),
    );
    expect(server.expiredLeases).toBe(0);
  });

  it('takes a heartbeat interval of its own for a whole-second lease', async () => {
    const run = server.enqueue();
    startWorker({
      leaseSeconds: 30,
      heartbeatIntervalMs: 100,
      handler: () => waitFor(() => server.callsOf('heartbeat', run.runId).length >= 3, { description: '3 heartbeats' }),
    });

    await waitFor(() => completed() === 1, { description: 'the completion' });
    expect(server.callsOf('heartbeat', run.runId).map((beat) => beat.body['leaseSeconds'])).toEqual([30, 30, 30]);
  });

  it('sends the heartbeats of runs in flight together in one call', async () => {
    const runs = Array.from({ length: 10 }, () => server.enqueue());
    const beatsOf = (runId: string): number => server.callsOf('heartbeat', runId).length;
    startWorker({
      concurrency: 10,
      leaseSeconds: 30,
      heartbeatIntervalMs: 100,
      handler: () =>
        waitFor(() => runs.every((r) => beatsOf(r.runId) >= 2), { description: '2 heartbeats of each run' }),
    });
    await waitFor(() => completed() === 10, { description: '10 completions' });
    const beats = runs.reduce((sum, run) => sum + beatsOf(run.runId), 0);
    // Every heartbeat went in a batch call, and far fewer calls than heartbeats carried them.
    expect(server.calls.filter((call) => call.kind === 'heartbeat' && call.runId === undefined)).toEqual([]);
    expect(server.heartbeatManyCalls).toBeGreaterThan(0);
    expect(server.heartbeatManyCalls).toBeLessThan(beats);
  });

  it('aborts the handler when a heartbeat finds the lease stale, and sends no completion for that run', async () => {
    const run = server.enqueue();
    let abortReason: unknown;
    const { worker } = startWorker({
      leaseSeconds: 0.3,
      handler: async (_run, { signal }) => {
        server.reassign(run.runId); // another worker takes the run over meanwhile
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        abortReason = signal.reason; // then returns as a success, which must be dropped
      },
    });

    await waitFor(logged('result dropped', run.runId), { description: 'the result to be dropped' });
    expect(abortReason).toBeInstanceOf(StaleLeaseError);
    await worker.shutdown({ graceMs: 1_000 }); // any completion still under way has arrived by now
    expect(server.callsOf('complete', run.runId)).toHaveLength(0);
    expect(server.callsOf('heartbeat', run.runId).map((beat) => beat.status)).toEqual([409]);
  });

  it('drops the result without retrying when the completion finds the lease stale', async () => {
    const run = server.enqueue();
    const { worker } = startWorker({ handler: async () => server.reassign(run.runId) });

    await waitFor(logged('completion refused', run.runId), { description: 'the refused completion' });
    await worker.shutdown();
    expect(server.callsOf('complete', run.runId).map((call) => call.status)).toEqual([409]);
  });

  it('sends a completion refused for the moment (503) again while the lease lasts, until it is taken', async () => {
    // Six refusals in a row: 100 + 200 + ... + 3,200 ms of backoff at most, past any fixed count of tries.
    server.failNext('complete', 6, 503);
    const run = server.enqueue();
    startWorker({ handler: async () => undefined, leaseSeconds: 30 });

    await waitFor(() => completed() === 1, { description: 'the completion taken', timeoutMs: 15_000 });
    // The refused calls, whole, then the run's completion in the call taken.
    expect(server.callsOf('complete').map((call) => call.status)).toEqual([503, 503, 503, 503, 503, 503, 200]);
    expect(server.callsOf('complete', run.runId).map((call) => call.status)).toEqual([200]);
  }, 20_000);

  it('gives a refused completion up once the lease it was for has expired', async () => {
    server.failNext('complete', 1_000, 503);
    const run = server.enqueue();
    startWorker({ handler: async () => undefined, leaseSeconds: 1 });

    await waitFor(logged('could not complete', run.runId), {
      description: 'the completion given up',
      timeoutMs: 5_000,
    });
    const calls = server.callsOf('complete');
    expect(calls.length).toBeGreaterThan(1);
    expect(calls.every((call) => call.status === 503)).toBe(true);
    expect(calls.at(-1)!.at - calls[0]!.at).toBeLessThan(1_000);
  });

  it('on shutdown stops leasing at once, waits for in-flight handlers and completes them', async () => {
    const run = server.enqueue();
    const release = gate();
    let started = false;
    const { worker, running } = startWorker({
      concurrency: 2,
      waitSeconds: 20,
      handler: async () => {
        started = true;
        await release.promise;
      },
    });
    let stopped = false;
    void running.then(() => (stopped = true));
    await waitFor(() => started && server.callsOf('lease').length === 2, {
      description: 'the handler and a second long poll',
    });

    const stopping = worker.shutdown({ graceMs: 5_000 });
    await waitFor(() => server.callsOf('lease')[1]!.clientAborted, {
      timeoutMs: 500,
      description: 'the long poll to be aborted',
    });
    server.enqueue(); // work that arrives during the drain is not leased
    expect(stopped).toBe(false);
    release.open();
    await Promise.all([stopping, running]);
    expect(server.callsOf('complete', run.runId).map((call) => [call.status, call.body['outcome']])).toEqual([
      [200, 'success'],
    ]);
    expect(server.callsOf('lease')).toHaveLength(2);
  });

  it('aborts a handler that outlives the grace period and leaves its run uncompleted', async () => {
    const run = server.enqueue();
    const release = gate();
    let abortReason: unknown;
    const { worker, running } = startWorker({
      handler: async (_run, { signal }) => {
        signal.addEventListener('abort', () => (abortReason = signal.reason));
        await release.promise; // ignores its signal
      },
    });
    await waitFor(() => server.callsOf('lease').length === 2, { description: 'the run leased and the next poll open' });

    const shutdownAt = Date.now();
    await worker.shutdown({ graceMs: 200 });
    await running;
    expect(Date.now() - shutdownAt).toBeGreaterThanOrEqual(150);
    expect(abortReason).toBeInstanceOf(GracePeriodOverError);
    release.open(); // it finishes late: the result is dropped
    await waitFor(logged('result dropped', run.runId), { description: 'the late result to be dropped' });
    expect(server.callsOf('complete', run.runId)).toHaveLength(0);
    expect(server.runs.get(run.runId)!.state).toBe('leased'); // for the server's lease expiry to hand on
  });

  it('backs off on server errors, then recovers', async () => {
    server.failNext('lease', 3, 500);
    const run = server.enqueue();
    startWorker({ handler: async () => undefined });

    await waitFor(() => server.callsOf('complete', run.runId).length === 1, { description: 'the completion' });
    const leaseCalls = server.callsOf('lease');
    expect(leaseCalls.slice(0, 4).map((call) => call.status)).toEqual([500, 500, 500, 200]);
    // 100, 200, 400 ms with equal jitter: at least half of each.
    [50, 100, 200].forEach((least, i) =>
      expect(leaseCalls[i + 1]!.at - leaseCalls[i]!.at).toBeGreaterThanOrEqual(least - 5),
    );
    expect(
      logger.entries
        .filter((entry) => entry.message.startsWith('lease failed'))
        .map((entry) => entry.fields['failures']),
    ).toEqual([1, 2, 3]);
  });

  it('polls at most once a second when the server answers empty at once', async () => {
    startWorker({ waitSeconds: 0, handler: async () => undefined });

    await waitFor(() => server.callsOf('lease').length >= 2, { description: 'a second poll' });
    // Counted over a window rather than timed between two arrivals: a request's own latency on a busy
    // machine moves one arrival by a hundred milliseconds, while a worker that did not wait would poll
    // hundreds of times.
    const first = server.callsOf('lease')[0]!.at;
    await waitFor(() => Date.now() >= first + 2_500, { description: '2.5 s of polling' });
    expect(server.callsOf('lease').filter((call) => call.at <= first + 2_500).length).toBeLessThanOrEqual(4);
  });

  it('stopOnSignals shuts down on SIGTERM, then removes its listeners', async () => {
    const listeners = process.listenerCount('SIGTERM');
    const { worker, running } = startWorker({ handler: async () => undefined });
    worker.stopOnSignals({ graceMs: 1_000 });
    expect(process.listenerCount('SIGTERM')).toBe(listeners + 1);
    await waitFor(() => server.callsOf('lease').length === 1, { description: 'a long poll' });

    process.emit('SIGTERM');
    await running;
    await waitFor(() => server.callsOf('lease')[0]!.clientAborted, {
      timeoutMs: 500,
      description: 'the long poll to be aborted',
    });
    expect(process.listenerCount('SIGTERM')).toBe(listeners);
  });
});
