import { randomBytes } from 'node:crypto';
import { defineNewJobs, shardOf } from '@chronicle/commands';
import type { JobDefinition } from '@chronicle/domain';
import { ConfigError, createPool, withTransaction } from '@chronicle/platform';
import { createTestDatabase, runDecisions, testJob, waitFor, type TestDatabase } from '@chronicle/testing';
import { Materialiser } from '../materialiser/materialiser';
import { holdShards, ShardFencedError } from './shard-fence';
import { ShardOwnership, type ShardScope } from './shard-ownership';

/** A short lease, so that a node that stops renewing loses its shards within the test. */
const LEASE_SECONDS = 3;
const SHARDS = 16;

const minutely = (name: string): JobDefinition =>
  testJob({ name, schedule: { cron: '* * * * *', timeZone: 'UTC', jitterSeconds: 0 } });

describe('shards: the job-to-shard hash', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('is the same in SQL and TypeScript, for any name and shard count', async () => {
    const names = [
      'ops.nightly',
      '',
      'équipe.café-crème',
      '数据.同步',
      'emoji.🚀-launch',
      ...Array.from({ length: 2000 }, (_, i) => `team-${i}.${randomBytes(1 + (i % 40)).toString('base64url')}`),
    ];
    for (const shards of [1, 7, 16, 1024]) {
      const { rows } = await db.pool.query<{ shard: number }>(
        'SELECT chronicle_shard(n, $2) AS shard FROM unnest($1::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i',
        [names, shards],
      );
      expect(rows.map((r) => r.shard)).toEqual(names.map((n) => shardOf(n, shards)));
    }
    // Spread: 2,000 names over 16 shards, none empty and none with twice its share.
    const counts = new Array<number>(SHARDS).fill(0);
    for (const name of names) counts[shardOf(name, SHARDS)]!++;
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBeLessThan((2 * names.length) / SHARDS);
  });
});

describe('shards: ownership, spread, takeover and the fence', () => {
  let db: TestDatabase;
  const node = (name: string, shards = SHARDS): ShardOwnership =>
    new ShardOwnership(db.pool, name, shards, LEASE_SECONDS);

  beforeEach(async () => {
    db = await createTestDatabase();
  });
  afterEach(() => db.drop());

  const owners = async (): Promise<Array<{ shard: number; owner: string | null; epoch: number }>> =>
    (
      await db.pool.query<{ shard: number; owner: string | null; epoch: string }>(
        'SELECT shard, owner, epoch FROM shard_leases WHERE shard < $1 ORDER BY shard',
        [SHARDS],
      )
    ).rows.map((r) => ({ shard: r.shard, owner: r.owner, epoch: Number(r.epoch) }));

  it('gives a lone node every shard, and spreads them evenly when a second joins', async () => {
    const a = node('node-a');
    await a.start();
    const first = await a.refresh();
    expect(first.granted.map((l) => l.shard)).toEqual([...Array(SHARDS).keys()]);
    expect(first.granted.every((l) => l.epoch === 1)).toBe(true);
    // Granted shards are served only once the takeover's passes ran.
    expect(a.scope().leases).toEqual([]);
    a.serve(a.takeoverScope());
    expect(a.scope().leases).toHaveLength(SHARDS);

    const b = node('node-b');
    await b.start();
    expect((await b.refresh()).granted).toEqual([]); // every shard is held: b waits for a to give some up
    expect((await a.refresh()).released).toHaveLength(SHARDS / 2);
    const joined = await b.refresh();
    expect(joined.granted).toHaveLength(SHARDS / 2);
    expect(joined.granted.every((l) => l.epoch === 2)).toBe(true);

    const rows = await owners();
    expect(rows.filter((r) => r.owner === 'node-a')).toHaveLength(SHARDS / 2);
    expect(rows.filter((r) => r.owner === 'node-b')).toHaveLength(SHARDS / 2);
    // A further round changes nothing: the spread is stable.
    expect(await a.refresh()).toEqual({ granted: [], lost: [], released: [] });
    expect(await b.refresh()).toEqual({ granted: [], lost: [], released: [] });

    // A node that stops gives its shards back at once: the other takes them at its next round.
    await b.stop();
    expect((await a.refresh()).granted).toHaveLength(SHARDS / 2);
    expect((await owners()).every((r) => r.owner === 'node-a')).toBe(true);
  });

  it("takes over a paused node's shards after its lease, under a newer epoch, and refuses the paused node's writes", async () => {
    const jobs = Array.from({ length: 40 }, (_, i) => minutely(`ops.tick-${i}`));
    await db.eventStore.unitOfWork(db.pool, (uow) => defineNewJobs(uow, jobs, 'test'));
    const a = node('node-a');
    await a.start();
    await a.refresh();
    a.serve(a.takeoverScope());
    const stale: ShardScope = a.scope();
    expect(stale.leases).toHaveLength(SHARDS);

    // node-a pauses (no refresh); node-b starts and, once a's lease ran out, is granted every shard.
    const b = node('node-b');
    await b.start();
    let taken: ShardScope | undefined;
    await waitFor(
      async () => {
        await b.refresh();
        taken = b.takeoverScope();
        return taken.leases.length === SHARDS;
      },
      { timeoutMs: (LEASE_SECONDS + 5) * 1000, pollMs: 200, description: "node-b granted node-a's shards" },
    );
    expect(taken!.leases.every((l) => l.epoch === 2)).toBe(true);

    // The new owner materialises first; then the paused node wakes up and tries with its old epochs.
    const now = new Date(Math.ceil(Date.now() / 60_000) * 60_000 - 30_000);
    const materialiser = new Materialiser(runDecisions(db.eventStore, db.pool), db.pool, { now: () => now });
    expect(await materialiser.materialiseOnce(taken!)).toBe(jobs.length);
    b.serve(taken!);
    // A minute on, every job is due again: the paused node's pass finds them, and its write is refused.
    const minuteOn = new Materialiser(runDecisions(db.eventStore, db.pool), db.pool, {
      now: () => new Date(now.getTime() + 60_000),
    });
    await expect(minuteOn.materialiseBatch(stale)).rejects.toBeInstanceOf(ShardFencedError);
    // Nothing was written twice: one RunScheduled per job and minute.
    const { rows } = await db.log.query<{ n: number; runs: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT stream_key)::int AS runs FROM events WHERE event_type = 'RunScheduled'",
    );
    expect(rows[0]).toEqual({ n: jobs.length, runs: jobs.length });
    // The paused node finds out at its next round.
    const woke = await a.refresh();
    expect(woke.lost).toHaveLength(SHARDS);
    expect(a.scope().leases).toEqual([]);
  });

  it("takes a dead node's shards within seconds by its lost presence, and a stalled node's only after its lease", async () => {
    const lease = 10;
    // Each node on a pool of its own, so that one can die: its connections cut, as by a SIGKILL.
    const pools = ['node-a', 'node-b', 'node-c'].map((name) =>
      createPool({ connectionString: db.url, max: 2, applicationName: name }),
    );
    const [a, b, c] = ['node-a', 'node-b', 'node-c'].map(
      (name, i) => new ShardOwnership(pools[i]!, name, SHARDS, lease, { presence: true }),
    );
    try {
      await a!.start();
      const spread = async (): Promise<boolean> => {
        for (const n of [a!, b!, c!]) await n.refresh();
        const held = await owners();
        return ['node-a', 'node-b', 'node-c'].every((n) => held.filter((r) => r.owner === n).length >= 5);
      };
      await waitFor(spread, { timeoutMs: 10_000, pollMs: 100, description: 'the shards spread over three nodes' });
      const ofA = (await owners()).filter((r) => r.owner === 'node-a').map((r) => r.shard);

      // node-a dies: PostgreSQL ends its sessions (its presence lock with them). Well within its lease,
      // b and c hold every shard, a's under newer epochs.
      await db.pool.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'node-a%'",
      );
      const died = Date.now();
      await waitFor(
        async () => {
          await b!.refresh();
          await c!.refresh();
          return (await owners()).every((r) => r.owner === 'node-b' || r.owner === 'node-c');
        },
        { timeoutMs: 8_000, pollMs: 200, description: "node-b and node-c holding dead node-a's shards" },
      );
      expect(Date.now() - died).toBeLessThan(lease * 1000 - 3_000);
      const after = await owners();
      for (const shard of ofA) expect(after[shard]!.epoch).toBeGreaterThan(1);

      // node-c stalls (alive, connected, not renewing): its shards wait for its lease.
      const ofC = after.filter((r) => r.owner === 'node-c').map((r) => r.shard);
      const stalled = Date.now();
      await waitFor(
        async () => {
          await b!.refresh();
          const held = await owners();
          return ofC.every((shard) => held[shard]!.owner === 'node-b');
        },
        { timeoutMs: (lease + 5) * 1000, pollMs: 200, description: "node-b holding stalled node-c's shards" },
      );
      expect(Date.now() - stalled).toBeGreaterThanOrEqual((lease - 2) * 1000);
    } finally {
      await Promise.all([b!.stop(), c!.stop()]);
      await Promise.all(pools.map((p) => p.end()));
    }
  }, 40_000);

  it('grants a shard only once the old owner has no write under way for it', async () => {
    const a = node('node-a');
    await a.start();
    await a.refresh();
    a.serve(a.takeoverScope());
    const b = node('node-b');
    await b.start();
    await withTransaction(db.pool, async (tx) => {
      await holdShards(tx, a.scope()); // a pass of node-a, mid-write
      await db.pool.query("UPDATE shard_leases SET lease_expires_at = now() - interval '1 second'");
      await db.pool.query("UPDATE scheduler_nodes SET last_seen = now() - interval '1 hour' WHERE node = 'node-a'");
      expect((await b.refresh()).granted).toEqual([]);
    });
    expect((await b.refresh()).granted).toHaveLength(SHARDS);
  });

  it('refuses to start with another shard count while shards are held, and takes it once none is', async () => {
    const a = node('node-a');
    await a.start();
    await a.refresh();
    const other = node('node-b', 32);
    await expect(other.start()).rejects.toBeInstanceOf(ConfigError);
    await expect(other.start()).rejects.toThrow(/SHARDS is 32 but this deployment has 16 shards/);
    await a.stop();
    await other.start();
    expect((await other.refresh()).granted).toHaveLength(32);
    const { rows } = await db.pool.query<{ shards: number }>('SELECT shards FROM shard_settings');
    expect(rows).toEqual([{ shards: 32 }]);
  });
});
