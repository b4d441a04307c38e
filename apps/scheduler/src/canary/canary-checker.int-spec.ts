import { Registry } from 'prom-client';
import { CANARY_QUEUE, CANARY_TEAM, canaryJobName, ensureCanaryJobs, shardOf, successesOf } from '@chronicle/commands';
import type { Clock } from '@chronicle/platform';
import {
  CompleteRuns,
  createTestDatabase,
  LeaseRuns,
  runDecisions,
  runServers,
  workerHandlers,
  type TestDatabase,
} from '@chronicle/testing';
import { Materialiser } from '../materialiser/materialiser';
import { soleNodeScope, type ShardScope } from '../shards/shard-ownership';
import { CanaryChecker, CanaryMetrics } from './canary-checker';

const SHARDS = 4;
const MINUTE = 60_000;

/**
 * The canaries end to end below HTTP: defined one per shard, materialised by the shard's owner,
 * leased and completed through the claim as the built-in worker does, and judged each minute by the
 * checker: a minute whose canary succeeded gives its lag, one whose canary did not is a miss, and
 * two in a row is what /healthz calls degraded.
 */
describe('canaries (docs/operations.md, "Canaries")', () => {
  let db: TestDatabase;
  let scope: ShardScope;
  let registry: Registry;
  let metrics: CanaryMetrics;
  let now: Date;
  const clock: Clock = { now: () => now };
  // The next whole minute, well ahead: the canary runs of these minutes are not due yet for the claim.
  const base = Math.ceil(Date.now() / MINUTE) * MINUTE;

  beforeAll(async () => {
    db = await createTestDatabase();
    scope = await soleNodeScope(db.pool, SHARDS);
    registry = new Registry();
    metrics = new CanaryMetrics(registry);
  });
  afterAll(() => db.drop());

  const checker = (): CanaryChecker =>
    new CanaryChecker(db.pool, runServers(db.eventStore, db.pool), SHARDS, clock, metrics);
  const metric = async (name: string): Promise<Record<string, number>> => {
    const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
    return Object.fromEntries((m?.values ?? []).map((v) => [String(v.labels['shard']), v.value]));
  };

  it('defines one canary job per shard, in the reserved team, each hashing to its shard', async () => {
    expect(await ensureCanaryJobs(db.eventStore, db.pool, SHARDS)).toBe(SHARDS);
    expect(await ensureCanaryJobs(db.eventStore, db.pool, SHARDS)).toBe(0);
    const { rows } = await db.pool.query<{ name: string; team: string; queue: string }>(
      "SELECT name, definition->>'team' AS team, definition->>'queue' AS queue FROM jobs ORDER BY name",
    );
    expect(rows).toHaveLength(SHARDS);
    for (let shard = 0; shard < SHARDS; shard++) expect(shardOf(canaryJobName(shard, SHARDS), SHARDS)).toBe(shard);
    expect(rows.every((r) => r.team === CANARY_TEAM && r.queue === CANARY_QUEUE)).toBe(true);
  });

  it('judges each minute once: a canary that succeeded gives its lag, the others are missed, twice in a row', async () => {
    // First look, a minute and a bit after `base`: the shard's past had no canaries, nothing is judged.
    now = new Date(base + MINUTE + 10_000);
    expect((await checker().checkOnce(scope)).every((v) => v.minutes === 0)).toBe(true);

    // The materialiser makes the canary runs of the next minute (base + 2 min); the built-in worker
    // would lease them when due: here, shard 0's only, through the same claim, then completes it.
    await new Materialiser(runDecisions(db.eventStore, db.pool), db.pool, {
      now: () => new Date(base + MINUTE + 30_000),
    }).materialiseOnce(scope);
    const due = base + 2 * MINUTE;
    // Its row and its place in the claim's queue (ready_runs), as if its time had come.
    for (const table of ['runs', 'ready_runs'])
      await db.pool.query(`UPDATE ${table} SET available_at = now() - interval '1 second' WHERE job = $1`, [
        canaryJobName(0, SHARDS),
      ]);
    const { lease, complete } = workerHandlers(db.eventStore, db.pool);
    const caller = { kind: 'worker' as const, team: CANARY_TEAM, queues: [CANARY_QUEUE], tokenId: 'canary' };
    const leases = await lease.execute(
      new LeaseRuns(caller, { queues: [CANARY_QUEUE], max: 10, leaseSeconds: 30, workerId: 'canary', waitSeconds: 0 }),
    );
    expect(leases).toHaveLength(1);
    await complete.execute(new CompleteRuns(caller, successesOf(leases)));

    // A minute after that minute: shard 0 succeeded; the others' canaries were never leased.
    now = new Date(due + MINUTE + 5_000);
    const first = await checker().checkOnce(scope);
    expect(first.map((v) => [v.shard, v.minutes, v.missed, v.consecutiveMissed])).toEqual([
      [0, 2, 1, 0], // base + 1 min had no canary run (none was made for it): missed; base + 2 min succeeded
      [1, 2, 2, 2],
      [2, 2, 2, 2],
      [3, 2, 2, 2],
    ]);
    expect(first[0]!.lagSeconds).not.toBeNull();
    // Judged once: the same instant again judges nothing more.
    expect((await checker().checkOnce(scope)).every((v) => v.minutes === 0)).toBe(true);

    const { rows } = await db.pool.query<{ shard: number; consecutive_missed: number; missed_total: string }>(
      'SELECT shard, consecutive_missed, missed_total FROM canary_status ORDER BY shard',
    );
    expect(rows.map((r) => [r.shard, r.consecutive_missed, Number(r.missed_total)])).toEqual([
      [0, 0, 1],
      [1, 2, 2],
      [2, 2, 2],
      [3, 2, 2],
    ]);
    expect(await metric('chronicle_canary_consecutive_missed')).toEqual({ '1': 2, '2': 2, '3': 2, '0': 0 });
    expect(Object.keys(await metric('chronicle_canary_lag_seconds'))).toEqual(['0']);
  });
});
