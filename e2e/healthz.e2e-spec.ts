import { ApiModule } from '@chronicle/api';
import { InMemoryEventStore, PostgresEventStore } from '@chronicle/event-store';
import { createPool } from '@chronicle/platform';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { startApp, type RunningApp } from './support/start-app';

/** Nothing listens here: a database that is down. */
const DEAD_DATABASE = 'postgres://postgres@127.0.0.1:1/none';

describe('GET /healthz', () => {
  let db: TestDatabase;
  const running: RunningApp[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(running.map((app) => app.close()));
    await db.drop();
  });
  const start = async (...args: Parameters<typeof startApp>): Promise<RunningApp> => {
    const app = await startApp(...args);
    running.push(app);
    return app;
  };

  it('is 200 with both checks up when the event store and the read-model database answer', async () => {
    const app = await start(db.pool, db.eventStore, [ApiModule]);
    const response = await fetch(`${app.url}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: 'ok',
      checks: {
        eventStore: { kind: 'postgres', status: 'up' },
        readModels: { status: 'up' },
        canaries: { status: 'up' },
      },
    });
  });

  it("is 200 but degraded while a shard's canary has missed twice in a row, and ok again once it has not", async () => {
    const app = await start(db.pool, db.eventStore, [ApiModule]);
    // What the scheduler's canary check records for shard 3 (canary-checker.int-spec.ts makes it for real).
    await db.pool.query(
      `INSERT INTO canary_status (shard, job, checked_through, consecutive_missed, missed_total)
       VALUES (3, '_canary.shard-3.0', now(), 2, 2)`,
    );
    const degraded = await fetch(`${app.url}/healthz`);
    expect(degraded.status).toBe(200);
    expect(await degraded.json()).toMatchObject({
      status: 'degraded',
      checks: { readModels: { status: 'up' }, canaries: { status: 'degraded', shards: [3] } },
    });
    await db.pool.query('UPDATE canary_status SET consecutive_missed = 0 WHERE shard = 3');
    expect(await (await fetch(`${app.url}/healthz`)).json()).toMatchObject({
      status: 'ok',
      checks: { canaries: { status: 'up' } },
    });
  });

  it('is 503 and names the read-model database when only it is down', async () => {
    const deadPool = createPool({ connectionString: DEAD_DATABASE, max: 1 });
    const app = await start(deadPool, new InMemoryEventStore(), [ApiModule]);
    const response = await fetch(`${app.url}/healthz`);
    expect(response.status).toBe(503);
    const body = (await response.json()) as {
      status: string;
      checks: Record<string, { status: string; error?: string }>;
    };
    expect(body.status).toBe('unavailable');
    expect(body.checks['eventStore']?.status).toBe('up');
    expect(body.checks['readModels']).toMatchObject({
      status: 'down',
      error: expect.stringMatching(/ECONNREFUSED|connect/),
    });
    await deadPool.end();
  });

  it('is 503 and names the event store when only it is down', async () => {
    const deadPool = createPool({ connectionString: DEAD_DATABASE, max: 1 });
    const app = await start(db.pool, new PostgresEventStore(deadPool), [ApiModule]);
    const response = await fetch(`${app.url}/healthz`);
    expect(response.status).toBe(503);
    const body = (await response.json()) as { checks: Record<string, { status: string }> };
    expect(body.checks['eventStore']?.status).toBe('down');
    expect(body.checks['readModels']?.status).toBe('up');
    await deadPool.end();
  });

  it('answers unknown routes with an RFC 9457 problem, not an HTML page', async () => {
    const app = await start(db.pool, db.eventStore, [ApiModule]);
    const response = await fetch(`${app.url}/v1/nothing-here`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await response.json()).toMatchObject({
      type: '/problems/not-found',
      status: 404,
      title: expect.any(String),
      detail: expect.any(String),
    });
  });
});
