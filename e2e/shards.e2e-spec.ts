import { ApiModule } from '@chronicle/api';
import { shardOf } from '@chronicle/commands';
import { SchedulerModule } from '@chronicle/scheduler';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { apiClient, type ApiClient } from './support/api-client';
import { scrapeMetrics } from './support/prometheus-text';
import { startApp, type RunningApp } from './support/start-app';
import { createTeam } from './support/team-tokens';

const ADMIN_TOKEN = 'e2e-admin-token-shards-0123456789';
const SHARDS = 16;

interface Shard {
  shard: number;
  owner: string | null;
  epoch: number;
  leaseExpiresAt: string | null;
  lastMaterialisedAt: string | null;
  lastReapedAt: string | null;
  dueNextMinute: number;
  server: string;
}

/** Two API + scheduler processes on one database, with a short shard lease. */
describe('shards and their owners over HTTP (GET /v1/admin/shards)', () => {
  let db: TestDatabase;
  let apps: RunningApp[];
  let admin: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    // No canaries: each shard's would be among its runs due within the minute.
    const env = { SHARD_LEASE_SECONDS: '3', CANARIES: 'off' };
    apps = [];
    for (let i = 0; i < 2; i++)
      apps.push(await startApp(db.pool, db.eventStore, [ApiModule, SchedulerModule], ADMIN_TOKEN, undefined, env));
    admin = apiClient(apps[0]!.url, ADMIN_TOKEN);
  });
  afterAll(async () => {
    for (const app of apps ?? []) await app.close();
    await db?.drop();
  });

  const shards = async (): Promise<Shard[]> => {
    const answer = await admin.get<{ shards: Shard[] }>('/v1/admin/shards');
    expect(answer.status).toBe(200);
    return answer.body.shards;
  };
  const byOwner = (list: Shard[]): Map<string | null, number> => {
    const counts = new Map<string | null, number>();
    for (const s of list) counts.set(s.owner, (counts.get(s.owner) ?? 0) + 1);
    return counts;
  };

  it('shows every shard, spread evenly over the two nodes, each reaped and materialised by its owner', async () => {
    let list: Shard[] = [];
    await waitFor(
      async () => {
        list = await shards();
        const counts = byOwner(list);
        return counts.size === 2 && [...counts.values()].every((n) => n === SHARDS / 2) && !counts.has(null);
      },
      { timeoutMs: 20_000, pollMs: 200, description: 'the shards spread 8 and 8 over the two nodes' },
    );
    expect(list.map((s) => s.shard)).toEqual([...Array(SHARDS).keys()]);
    for (const owner of byOwner(list).keys()) expect(owner).toMatch(/^[^:]+:\d+#[0-9a-f]{4}$/);
    // One database, no shard map: every shard's runs are in the control database.
    expect(new Set(list.map((s) => s.server))).toEqual(new Set(['control']));
    await waitFor(
      async () => (list = await shards()).every((s) => s.lastReapedAt !== null && s.lastMaterialisedAt !== null),
      { description: 'a pass of each shard by its owner' },
    );
    for (const s of list) {
      expect(s.epoch).toBeGreaterThanOrEqual(1);
      expect(Date.parse(s.leaseExpiresAt!)).toBeGreaterThan(Date.now() - 1000);
      expect(Date.parse(s.lastReapedAt!)).toBeGreaterThan(Date.now() - 10_000);
    }
  });

  it('counts the runs coming due within the minute in their shard', async () => {
    const { team } = await createTeam(apps[0]!.url, ADMIN_TOKEN, 'shardy', ['shardy']);
    expect((await team.put('/v1/jobs/shardy.soon', { queue: 'shardy' })).status).toBe(201);
    for (const delaySeconds of [20, 30, 600])
      expect((await team.post('/v1/jobs/shardy.soon/runs', { delaySeconds })).status).toBe(201);
    const list = await shards();
    const home = shardOf('shardy.soon', SHARDS);
    expect(list[home]!.dueNextMinute).toBe(2);
    expect(list.filter((s) => s.shard !== home).every((s) => s.dueNextMinute === 0)).toBe(true);
  });

  it("refuses a team's token as a problem, and lets the other node take a stopped node's shards under newer epochs", async () => {
    const { team } = await createTeam(apps[0]!.url, ADMIN_TOKEN, 'nosy', ['nosy']);
    const refused = await team.get('/v1/admin/shards');
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ type: expect.stringMatching(/forbidden$/) });

    const before = await shards();
    const counts = byOwner(before);
    await apps[1]!.close();
    apps.pop();
    let after: Shard[] = [];
    await waitFor(async () => byOwner((after = await shards())).size === 1 && after.every((s) => s.owner !== null), {
      timeoutMs: 15_000,
      pollMs: 200,
      description: 'one node holding every shard',
    });
    const [survivor] = [...byOwner(after).keys()];
    expect(counts.get(survivor!)).toBe(SHARDS / 2);
    for (const s of after) {
      const was = before[s.shard]!;
      expect(s.epoch).toBe(was.owner === survivor ? was.epoch : was.epoch + 1);
    }
    // The survivor's metrics say so once it served them (after their takeover passes).
    await waitFor(async () => (await scrapeMetrics(apps[0]!.url)).value('chronicle_shards_held') === SHARDS, {
      description: 'chronicle_shards_held at 16 on the node left',
    });
  });
});
