import { defineNewJobs } from '@chronicle/commands';
import { createTestDatabase, testJob, waitFor, type TestDatabase } from '@chronicle/testing';
import { buildDist } from './support/build-dist';
import { exited, startRole, stopAll, type RoleProcess } from './support/role-process';

/**
 * Two scheduler processes (`npm run start:scheduler`, built) on one database, with a 3 s shard lease:
 * one is stopped (SIGSTOP) past its lease, the other takes its shards under newer epochs; resumed
 * (SIGCONT), the first finds them gone, its writes under the old epochs go nowhere, the shards spread
 * again, and no fire time of the cron jobs they share is materialised twice or skipped.
 */
const SHARDS = 16;
const LEASE_SECONDS = 3;
const JOBS = 60;

describe('scheduler nodes: a paused owner loses its shards and cannot write for them', () => {
  let db: TestDatabase;
  const started: RoleProcess[] = [];

  beforeAll(async () => {
    await buildDist();
    db = await createTestDatabase();
    const jobs = Array.from({ length: JOBS }, (_, i) =>
      testJob({ name: `fleet.tick-${i}`, schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 0 } }),
    );
    await db.eventStore.unitOfWork(db.pool, (uow) => defineNewJobs(uow, jobs, 'test'));
  }, 120_000);
  afterAll(async () => {
    await stopAll(started);
    await db?.drop();
  });

  const start = async (): Promise<RoleProcess> => {
    const node = await startRole('scheduler', db, { SHARD_LEASE_SECONDS: String(LEASE_SECONDS) });
    started.push(node);
    return node;
  };

  const leases = async (): Promise<Array<{ shard: number; owner: string | null; epoch: number }>> =>
    (
      await db.pool.query<{ shard: number; owner: string | null; epoch: string }>(
        'SELECT shard, owner, epoch FROM shard_leases WHERE shard < $1 ORDER BY shard',
        [SHARDS],
      )
    ).rows.map((r) => ({ ...r, epoch: Number(r.epoch) }));
  const heldBy = (rows: Awaited<ReturnType<typeof leases>>, s: RoleProcess): number =>
    rows.filter((r) => r.owner !== null && new RegExp(`:${s.pid}#`).test(r.owner)).length;
  const spread = async (a: RoleProcess, b: RoleProcess): Promise<boolean> => {
    const rows = await leases();
    return heldBy(rows, a) === SHARDS / 2 && heldBy(rows, b) === SHARDS / 2;
  };

  it('takes a stopped node’s shards after its lease, refuses its old epochs, and doubles no fire time', async () => {
    const a = await start();
    const b = await start();
    await waitFor(() => spread(a, b), { timeoutMs: 20_000, pollMs: 100, description: 'the shards spread 8 and 8' });
    const before = await leases();

    a.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    await waitFor(async () => heldBy(await leases(), b) === SHARDS, {
      timeoutMs: (LEASE_SECONDS + 10) * 1000,
      pollMs: 100,
      description: "the running node holding the stopped node's shards",
    });
    const takeoverMs = Date.now() - stoppedAt;
    const taken = await leases();
    for (const row of taken) {
      const was = before[row.shard]!;
      expect(row.epoch).toBe(heldBy([was], a) === 1 ? was.epoch + 1 : was.epoch);
    }
    // Not before its lease ran out (renewed up to a refresh, about 1 s, before the stop; more under
    // load), and soon after.
    expect(takeoverMs).toBeGreaterThanOrEqual((LEASE_SECONDS - 2) * 1000);
    expect(takeoverMs).toBeLessThan((LEASE_SECONDS + 5) * 1000);

    a.child.kill('SIGCONT');
    // Resumed, it finds its shards gone (at its next refresh, or by a write the fence refused) ...
    await waitFor(() => /shards lost|write refused/.test(a.output()), {
      timeoutMs: 10_000,
      description: 'the resumed node saying its shards are gone',
    });
    const saw = /write refused/.test(a.output()) ? 'a write refused by the fence' : 'its shards lost at its refresh';
    console.log(
      `shard takeover after SIGSTOP: ${takeoverMs} ms (lease ${LEASE_SECONDS} s); the resumed node saw ${saw}`,
    );
    // ... and is given its share again, under newer epochs still.
    await waitFor(() => spread(a, b), { timeoutMs: 20_000, pollMs: 100, description: 'the shards spread again' });
    const after = await leases();
    for (const row of after) expect(row.epoch).toBeGreaterThanOrEqual(taken[row.shard]!.epoch);

    // Every fire time materialised once: one RunScheduled per run, and per job consecutive minutes; the
    // canary of each shard (docs/operations.md, "Canaries") with them.
    const { rows } = await db.log.query<{ job: string; due: string[]; events: number; streams: number }>(
      `SELECT data->>'job' AS job, array_agg(data->>'dueAt' ORDER BY data->>'dueAt') AS due,
              count(*)::int AS events, count(DISTINCT stream_key)::int AS streams
         FROM events WHERE event_type = 'RunScheduled' GROUP BY 1`,
    );
    expect(rows.filter((r) => !r.job.startsWith('_canary.'))).toHaveLength(JOBS);
    expect(rows.filter((r) => r.job.startsWith('_canary.'))).toHaveLength(SHARDS);
    for (const job of rows) {
      expect([job.job, job.events]).toEqual([job.job, job.streams]);
      const minutes = job.due.map((d) => Date.parse(d) / 60_000);
      expect([job.job, minutes]).toEqual([job.job, minutes.map((_, i) => minutes[0]! + i)]);
    }

    for (const s of [a, b]) s.child.kill('SIGTERM');
    expect(await Promise.all([exited(a.child), exited(b.child)])).toEqual([0, 0]);
    // Stopping, each gave its shards back.
    expect((await leases()).every((r) => r.owner === null)).toBe(true);
  }, 90_000);
});
