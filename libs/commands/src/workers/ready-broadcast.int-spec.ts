import type { PresentRun } from '@chronicle/domain';
import { createLogger, type Relay } from '@chronicle/platform';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { ReadyBroadcast, ReadySignal, notifyRunsReady, type Wanting } from './ready-signal';

/** Long-polls woken across processes: each "process" here is a ReadySignal with its ReadyBroadcast. */
describe('ready runs announced across processes (LISTEN/NOTIFY)', () => {
  let db: TestDatabase;
  const processes: Array<{ ready: ReadySignal; broadcast: ReadyBroadcast }> = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    for (let i = 0; i < 2; i++) {
      const ready = new ReadySignal();
      const broadcast = new ReadyBroadcast(db.pool, ready, createLogger('error'));
      await broadcast.onModuleInit();
      processes.push({ ready, broadcast });
    }
  });
  afterAll(async () => {
    for (const p of processes) await p.broadcast.onModuleDestroy();
    await db.drop();
  });

  /** A waiter of a process, as a waiting lease request is: resolves on a wake-up, or after a minute. */
  const waiter = (
    ready: ReadySignal,
    wanting?: Wanting,
  ): { woken: () => boolean; relay: () => Relay<Wanting> | undefined } => {
    let woken = false;
    let relay: Relay<Wanting> | undefined;
    void ready.wait(60_000, undefined, wanting).then((r) => {
      woken = true;
      relay = r;
    });
    return { woken: () => woken, relay: () => relay };
  };

  it("wakes the other process's waiting lease requests, and its own", async () => {
    const [a, b] = processes;
    const there = waiter(b!.ready);
    const here = waiter(a!.ready);
    a!.ready.notify();
    await waitFor(() => here.woken(), { timeoutMs: 5000, description: "this process's waiter woken" });
    await waitFor(() => there.woken(), { timeoutMs: 5000, description: "the other process's waiter woken" });
  });

  it("wakes them on a scheduler's announcement, and again after its listening connection was cut", async () => {
    const [a, b] = processes;
    const first = waiter(b!.ready);
    await notifyRunsReady(db.pool, 'scheduler-test');
    await waitFor(() => first.woken(), { timeoutMs: 5000, description: 'woken by the scheduler' });

    // The server ends every listening connection (a restart, an operator): each listens again.
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
    );
    expect(rows[0]!.n).toBe(2);
    await waitFor(
      async () =>
        (
          await db.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
          )
        ).rows[0]!.n === 2,
      { timeoutMs: 10_000, description: 'both listening again' },
    );
    const again = waiter(b!.ready);
    a!.ready.notify();
    await waitFor(() => again.woken(), { timeoutMs: 5000, description: 'woken after listening again' });
  });

  it('wakes one waiter of the queue and team for a place freed, in each process, and the next when it is passed on', async () => {
    const [a, b] = processes;
    const first = waiter(a!.ready, { queues: ['q'], team: 't' });
    const second = waiter(a!.ready, { queues: ['q'], team: 't' });
    const otherQueue = waiter(a!.ready, { queues: ['other'], team: null });
    const otherTeam = waiter(b!.ready, { queues: ['q'], team: 'u' });
    const platform = waiter(b!.ready, { queues: ['other', 'q'], team: null });
    const later = waiter(b!.ready, { queues: ['q'], team: 't' });
    // A run of a concurrency key ended: its place may go to a waiting run of its key.
    const ended = { status: 'succeeded', definition: { job: 'j', team: 't', queue: 'q', concurrencyKey: 'k' } };
    a!.ready.decided([ended as unknown as PresentRun]);

    await waitFor(() => platform.woken(), {
      timeoutMs: 5000,
      description: "the other process's platform waiter woken",
    });
    expect(first.woken()).toBe(true);
    expect(first.relay()).toBeDefined();
    // Woken at once where they are woken at all (this process, and the same notification in the other).
    expect([second, otherQueue, otherTeam, later].map((w) => w.woken())).toEqual([false, false, false, false]);

    // The first could not try (its worker went away): the next waiter for the place has it.
    a!.ready.pass(first.relay());
    await waitFor(() => second.woken(), { timeoutMs: 5000, description: 'the next waiter woken' });
    expect(otherQueue.woken()).toBe(false);
    // The waiters left, woken here only (a notify would reach the other process in the next test).
    for (const ready of [a!.ready, b!.ready]) ready.wakeHere();
  });

  it("wakes one waiter of the queues and team for a rate's next token, with one timer for all", async () => {
    const [a] = processes;
    const wanting = { queues: ['q', 'r'], team: 't' };
    const first = waiter(a!.ready, wanting);
    const second = waiter(a!.ready, { queues: ['r', 'q'], team: 't' });
    const otherTeam = waiter(a!.ready, { queues: ['q', 'r'], team: null });
    const at = Date.now() + 50;
    a!.ready.wakeOneAt(at, wanting);
    a!.ready.wakeOneAt(at + 1, { queues: ['r', 'q'], team: 't' }); // the same token, as another waiter saw it
    await waitFor(() => first.woken(), { timeoutMs: 5000, description: 'the longest waiter woken at the token' });
    expect(first.relay()?.reason).toBe('token');
    expect(Date.now()).toBeGreaterThanOrEqual(at);
    await new Promise((resolve) => setTimeout(resolve, 100)); // past a second timer's time, had there been one
    expect([second.woken(), otherTeam.woken()]).toEqual([false, false]);
    a!.ready.wakeHere();
  });
});
