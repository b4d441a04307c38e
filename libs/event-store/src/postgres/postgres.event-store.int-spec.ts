import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase, waitFor } from '@chronicle/testing';
import { WrongExpectedRevisionError } from '../event-store.errors';
import { START, type RecordedEvent } from '../event-store.port';
import { describeEventStoreContract } from '../testing/event-store.contract';
import { PostgresEventStore } from './postgres.event-store';
import { READ_ALL_SQL } from './read-events.sql';

describeEventStoreContract('postgres', async () => {
  const db = await createTestDatabase();
  return {
    store: new PostgresEventStore(db.pool, { idleWaitMs: 20 }),
    readModels: db.pool,
    atomic: true,
    teardown: () => db.drop(),
  };
});

// The log in a database of its own (EVENT_STORE_URL): no transaction shared with the read models.
describeEventStoreContract('postgres, split from the read models', async () => {
  const [log, readModels] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  return {
    store: new PostgresEventStore(log.pool, { idleWaitMs: 20 }),
    readModels: readModels.pool,
    atomic: false,
    teardown: async () => {
      await Promise.all([log.drop(), readModels.drop()]);
    },
  };
});

describe('PostgreSQL event store: commit order', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
  });
  afterAll(() => db.drop());

  const prefix = (): string => `t${randomUUID().slice(0, 8)}`;
  const ofPrefix = (p: string, events: readonly RecordedEvent[]): string[] =>
    events.filter((e) => e.streamId.startsWith(p)).map((e) => e.type);

  it('does not let a reader move past a transaction that is still open while a later one commits', async () => {
    const p = prefix();
    const slow = await db.pool.connect();
    try {
      await slow.query('BEGIN');
      await store.appendWith(slow, [
        { streamId: `${p}-slow`, expected: 'no_stream', events: [{ type: 'WrittenFirst', data: {} }] },
      ]);
      await store.appendToStream(`${p}-fast`, 'no_stream', [{ type: 'CommittedFirst', data: {} }]);

      // The fast writer committed, but its event sorts after the open one: not readable yet.
      const early = await store.readAll({ from: START, maxCount: 10_000 });
      expect(ofPrefix(p, early)).toEqual([]);
      const checkpoint = early.at(-1)?.position ?? START;

      await slow.query('COMMIT');
      const late = await waitForEvents(store, checkpoint, p, 2);
      expect(late).toEqual(['WrittenFirst', 'CommittedFirst']);
    } finally {
      slow.release();
    }
  });

  it('refuses an append from a transaction that wrote before a later writer of the same stream', async () => {
    const p = prefix();
    const early = await db.pool.connect();
    try {
      await early.query('BEGIN');
      await early.query('SELECT pg_current_xact_id()'); // a first write: the transaction now has its id
      await store.appendToStream(`${p}-s`, 'no_stream', [{ type: 'ByLaterTransaction', data: {} }]);
      await expect(
        store.appendWith(early, [
          { streamId: `${p}-s`, expected: 'any', events: [{ type: 'WouldSortFirst', data: {} }] },
        ]),
      ).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await early.query('ROLLBACK');
    } finally {
      early.release();
    }
    // Retried in a fresh transaction it goes through, after the other writer's event.
    await store.appendToStream(`${p}-s`, 'any', [{ type: 'Retried', data: {} }]);
    expect(await waitForEvents(store, START, p, 2)).toEqual(['ByLaterTransaction', 'Retried']);
  });

  it('accepts an append after earlier writes when no later transaction touched the stream', async () => {
    const p = prefix();
    const tx = await db.pool.connect();
    try {
      await tx.query('BEGIN');
      await tx.query('SELECT pg_current_xact_id()');
      await store.appendWith(tx, [{ streamId: `${p}-s`, expected: 'no_stream', events: [{ type: 'A', data: {} }] }]);
      await store.appendWith(tx, [{ streamId: `${p}-s`, expected: 0n, events: [{ type: 'B', data: {} }] }]);
      await tx.query('COMMIT');
    } finally {
      tx.release();
    }
    expect((await store.readStream(`${p}-s`)).map((e) => e.type)).toEqual(['A', 'B']);
  });

  it("reads the global log by range scans of the partitions' primary keys, merged in order, without sorting", async () => {
    await db.pool.query(`INSERT INTO events (event_id, stream_key, stream_revision, event_type, data)
      SELECT gen_random_uuid(), es_stream_key('plan-' || g), 0, 'Filler', '{}' FROM generate_series(1, 20000) g`);
    // The plan is chosen by the statistics: analysed until the partition the filler went to (streams that are
    // not runs are kept: events_kept) counts its rows, as a busy server's own ANALYZE may not yet have.
    await waitFor(
      async () => {
        await db.pool.query('ANALYZE events, events_kept');
        const { rows } = await db.pool.query<{ n: number }>(
          "SELECT reltuples::int AS n FROM pg_class WHERE oid = 'events_kept'::regclass",
        );
        return rows[0]!.n >= 20_000;
      },
      { description: 'events_kept analysed with the filler in it' },
    );
    const { rows } = await db.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${READ_ALL_SQL}`, ['0', '-1', 1000]);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    // Partitioned by week (migrations/0019): each partition's key scanned in order, and merged.
    expect(plan).toMatch(/Merge Append/);
    expect(plan).toMatch(/Index Scan using events_kept_pkey/);
    expect(plan).not.toMatch(/->\s+(Incremental )?Sort\b|Seq Scan/);
  });

  it('rejects data PostgreSQL cannot store as an invalid append, writing nothing', async () => {
    const p = prefix();
    await expect(
      store.appendToStream(`${p}-nul`, 'any', [{ type: 'Bad', data: { text: 'a\u0000b' } }]),
    ).rejects.toMatchObject({ code: 'invalid-append' });
    expect(await store.readStream(`${p}-nul`)).toEqual([]);
  });
});

/** The types of the events of `prefix`'s streams after `from`, once `count` of them are readable (10 s at most). */
async function waitForEvents(
  store: PostgresEventStore,
  from: RecordedEvent['position'],
  prefix: string,
  count: number,
): Promise<string[]> {
  let types: string[] = [];
  const readable = async (): Promise<boolean> => {
    types = (await store.readAll({ from, maxCount: 10_000 }))
      .filter((e) => e.streamId.startsWith(prefix))
      .map((e) => e.type);
    return types.length >= count;
  };
  await waitFor(readable, { description: `${count} events of the streams ${prefix}-*` }).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; readable: ${JSON.stringify(types)}`);
  });
  return types;
}
