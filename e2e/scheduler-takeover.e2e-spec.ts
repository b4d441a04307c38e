import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { defineNewJobs } from '@chronicle/commands';
import { findFreePort } from '@chronicle/platform';
import { createTestDatabase, testJob, waitFor, type TestDatabase } from '@chronicle/testing';
import { buildDist } from './support/build-dist';
import { waitUntilHealthy } from './support/wait-healthy';

/**
 * Two scheduler processes (`npm run start:scheduler`, built) on one database, with a 3 s shard lease:
 * one is stopped (SIGSTOP) past its lease, the other takes its shards under newer epochs; resumed
 * (SIGCONT), the first finds them gone, its writes under the old epochs go nowhere, the shards spread
 * again, and no fire time of the cron jobs they share is materialised twice or skipped.
 */
const root = path.resolve(__dirname, '..');
const schedulerMain = path.join(root, 'dist/apps/scheduler/src/main.js');
const SHARDS = 16;
const LEASE_SECONDS = 3;
const JOBS = 60;

interface Scheduler {
  readonly child: ChildProcess;
  readonly pid: number;
  output(): string;
}

describe('scheduler nodes: a paused owner loses its shards and cannot write for them', () => {
  let db: TestDatabase;
  const started: Scheduler[] = [];

  beforeAll(async () => {
    await buildDist();
    db = await createTestDatabase();
    const jobs = Array.from({ length: JOBS }, (_, i) =>
      testJob({ name: `fleet.tick-${i}`, schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 0 } }),
    );
    await db.eventStore.unitOfWork(db.pool, (uow) => defineNewJobs(uow, jobs, 'test'));
  }, 120_000);
  afterAll(async () => {
    for (const s of started) {
      if (s.child.exitCode !== null) continue;
      s.child.kill('SIGCONT');
      s.child.kill('SIGTERM');
      await exited(s.child);
    }
    await db?.drop();
  });

  const start = async (): Promise<Scheduler> => {
    const port = await findFreePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: db.url,
      SHARD_LEASE_SECONDS: String(LEASE_SECONDS),
      LOG_LEVEL: 'info',
    };
    if (db.logUrl !== db.url) env['EVENT_STORE_URL'] = db.logUrl;
    else delete env['EVENT_STORE_URL'];
    const child = spawn(process.execPath, [schedulerMain], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const scheduler = { child, pid: child.pid!, output: () => out };
    started.push(scheduler);
    await waitUntilHealthy(`http://127.0.0.1:${port}`, {
      exitedWith: () => (child.exitCode === null ? undefined : out),
      output: () => out,
    });
    return scheduler;
  };

  const leases = async (): Promise<Array<{ shard: number; owner: string | null; epoch: number }>> =>
    (
      await db.pool.query<{ shard: number; owner: string | null; epoch: string }>(
        'SELECT shard, owner, epoch FROM shard_leases WHERE shard < $1 ORDER BY shard',
        [SHARDS],
      )
    ).rows.map((r) => ({ ...r, epoch: Number(r.epoch) }));
  const heldBy = (rows: Awaited<ReturnType<typeof leases>>, s: Scheduler): number =>
    rows.filter((r) => r.owner !== null && new RegExp(`:${s.pid}#`).test(r.owner)).length;
  const spread = async (a: Scheduler, b: Scheduler): Promise<boolean> => {
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
    // Not before its lease ran out (renewed up to a refresh, 1 s, before the stop), and soon after.
    expect(takeoverMs).toBeGreaterThanOrEqual((LEASE_SECONDS - 1) * 1000 - 200);
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
    // canary of each shard (reference 9.3) with them.
    const { rows } = await db.log.query<{ job: string; due: string[]; events: number; streams: number }>(
      `SELECT data->>'job' AS job, array_agg(data->>'dueAt' ORDER BY data->>'dueAt') AS due,
              count(*)::int AS events, count(DISTINCT stream_id)::int AS streams
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

function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}
