import type { QueryBus } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { Registry } from 'prom-client';
import {
  type EventStore,
  type LogPosition,
  PostgresEventStore,
  RunServerDirectory,
  START,
} from '@chronicle/event-store';
import { createPool, createLogger, loadConfig, systemClock } from '@chronicle/platform';
import { PROJECTIONS, resetCheckpoint, setCheckpoint } from '@chronicle/projections';
import { createTestDatabase, runServers, seedRuns, testJob, type TestDatabase, waitFor } from '@chronicle/testing';
import { GetQueueStatsHandler, type GetQueueStats } from '../listings/queue-stats.query';
import { ReadModelGauges } from './read-model-gauges';

const config = loadConfig({});

/** The run servers of a deployment: the control database alone, or with these servers beside it. */
function directory(
  control: TestDatabase,
  servers: ReadonlyArray<{ name: string; db: Pick<TestDatabase, 'url' | 'pool' | 'eventStore'> }> = [],
): RunServerDirectory {
  const connection = (
    name: string,
    { url, pool, eventStore }: { url: string; pool: Pool; eventStore: EventStore },
  ) => ({
    name,
    url,
    shards: [],
    arriving: [],
    pool,
    eventStore,
    close: async () => undefined,
  });
  return RunServerDirectory.fixed(config, [
    connection('control', control),
    ...servers.map(({ name, db }) => connection(name, db)),
  ]);
}

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
    new ReadModelGauges(
      registry,
      db.pool,
      db.eventStore,
      directory(db),
      createLogger('error'),
      queries as unknown as QueryBus,
    );

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
    new ReadModelGauges(
      registry,
      away,
      db.eventStore,
      directory(db),
      createLogger('error'),
      failing as unknown as QueryBus,
    );
    try {
      const text = await registry.metrics();
      expect(text).toContain('# TYPE chronicle_ready_runs gauge');
      expect(text).not.toMatch(/^chronicle_(ready_runs|oldest_ready_age_seconds|dlq_runs|projection_lag_events)\{/m);
    } finally {
      await away.end();
    }
  });

  it("shows each server's projections behind the log each is built from (the jobs copy: the control database's), a server away left out", async () => {
    const server = await createTestDatabase();
    // Nobody listens on port 1: server c is down, and only its series are left out.
    const away = createPool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1 });
    try {
      // Three runs in the server's log; its runs' checkpoint at the start, its run-activity at the head.
      const job = testJob({ name: 'billing.elsewhere', queue: 'billing', team: 'billing' });
      const dueAt = new Date();
      await seedRuns(
        server.pool,
        server.eventStore,
        [],
        [1, 2, 3].map((n) => ({ job, runId: `r-far-${n}`, dueAt })),
      );
      const serverHead = await server.eventStore.countEventsAfter(START, 1_000);
      const controlHead = await db.eventStore.countEventsAfter(START, 1_000);
      expect([serverHead, controlHead]).toEqual([3, expect.any(Number)]);
      await resetCheckpoint(server.pool, 'runs', 1);
      await setCheckpoint(server.pool, 'run-activity', 1, await headOf(server.eventStore, serverHead));
      // Its jobs copy has read nothing of the control log; the control database's projections are at its head.
      await resetCheckpoint(server.pool, 'jobs', 1);
      const controlAt = await headOf(db.eventStore, controlHead);
      for (const { name, version } of PROJECTIONS) await setCheckpoint(db.pool, name, version, controlAt);

      const registry = new Registry();
      const failing = { execute: () => Promise.reject(new Error('not asked here')) };
      new ReadModelGauges(
        registry,
        db.pool,
        db.eventStore,
        directory(db, [
          { name: 'b', db: server },
          { name: 'c', db: { url: '', pool: away, eventStore: new PostgresEventStore(away) } },
        ]),
        createLogger('error'),
        failing as unknown as QueryBus,
      );
      const lags = (await registry.getSingleMetric('chronicle_projection_lag_events')!.get()).values;
      const byServer = Object.fromEntries(
        lags.map((l) => [`${l.labels['server']}/${l.labels['projection']}`, l.value]),
      );
      expect(byServer).toEqual({
        ...Object.fromEntries(PROJECTIONS.map((p) => [`control/${p.name}`, 0])),
        'b/runs': 3,
        'b/run-activity': 0,
        'b/jobs': controlHead,
      });
    } finally {
      await Promise.all([server.drop(), away.end()]);
    }
  });
});

/**
 * The position of the last of the `count` events of `store`'s log, once its global log shows them all:
 * it shows an event once no older transaction of the cluster is in flight (under load, a while).
 */
async function headOf(store: EventStore, count: number): Promise<LogPosition> {
  let position = START;
  await waitFor(
    async () => {
      const all = await store.readAll({ maxCount: 1_000 });
      position = all.at(-1)?.position ?? START;
      return all.length >= count;
    },
    { description: `${count} events in the global log` },
  );
  return position;
}
