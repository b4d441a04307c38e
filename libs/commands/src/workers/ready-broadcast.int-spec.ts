import { createLogger } from '@chronicle/platform';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { ReadyBroadcast, ReadySignal, notifyRunsReady } from './ready-signal';

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
  const waiter = (ready: ReadySignal): { woken: () => boolean } => {
    let woken = false;
    void ready.wait(60_000, undefined).then(() => (woken = true));
    return { woken: () => woken };
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
});
