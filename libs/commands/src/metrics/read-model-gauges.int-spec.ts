import type { QueryBus } from '@nestjs/cqrs';
import { Registry } from 'prom-client';
import { createPool, createLogger, systemClock } from '@chronicle/platform';
import { createTestDatabase, runServers, seedRuns, testJob, type TestDatabase } from '@chronicle/testing';
import { GetQueueStatsHandler, type GetQueueStats } from '../listings/queue-stats.query';
import { ReadModelGauges } from './read-model-gauges';

describe('ReadModelGauges: the read models as Prometheus scrapes them', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.pool.query("INSERT INTO teams (id) VALUES ('billing')");
    await db.pool.query("INSERT INTO queue_grants (queue, team) VALUES ('billing', 'billing')");
    const job = testJob({ name: 'billing.report', queue: 'billing', team: 'billing', priority: 'critical' });
    const dueAt = new Date(Date.now() - 30_000);
    await seedRuns(
      db.pool,
      db.eventStore,
      [job],
      [
        { job, runId: 'r-gauge-1', dueAt },
        { job, runId: 'r-gauge-2', dueAt },
      ],
    );
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("asks the overview's query once per scrape for the three queue gauges, and shows what it counted", async () => {
    const handler = new GetQueueStatsHandler(db.pool, runServers(db.eventStore, db.pool), systemClock);
    const asked: GetQueueStats[] = [];
    const queries = { execute: (query: GetQueueStats) => (asked.push(query), handler.execute(query)) };
    const registry = new Registry();
    new ReadModelGauges(registry, db.pool, db.eventStore, createLogger('error'), queries as unknown as QueryBus);

    const text = await registry.metrics();
    expect(asked).toEqual([expect.objectContaining({ caller: { kind: 'admin' } })]);
    expect(text).toContain('chronicle_ready_runs{queue="billing",priority="critical"} 2');
    expect(text).toContain('chronicle_ready_runs{queue="billing",priority="bulk"} 0');
    expect(text).toContain('chronicle_dlq_runs{queue="billing"} 0');
    const age = /^chronicle_oldest_ready_age_seconds\{queue="billing",priority="critical"\} (\S+)$/m.exec(text)?.[1];
    expect(Number(age)).toBeGreaterThanOrEqual(30);
    expect(Number(age)).toBeLessThan(120);
    await registry.metrics();
    expect(asked).toHaveLength(2);
  });

  it('leaves out the gauges whose read fails, and still serves the rest', async () => {
    // Nobody listens on port 1: every read of this pool fails, as with the database away.
    const away = createPool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1 });
    const failing = { execute: () => Promise.reject(new Error('read models away')) };
    const registry = new Registry();
    new ReadModelGauges(registry, away, db.eventStore, createLogger('error'), failing as unknown as QueryBus);
    try {
      const text = await registry.metrics();
      expect(text).toContain('# TYPE chronicle_ready_runs gauge');
      expect(text).not.toMatch(/^chronicle_(ready_runs|oldest_ready_age_seconds|dlq_runs|projection_lag_events)\{/m);
    } finally {
      await away.end();
    }
  });
});
