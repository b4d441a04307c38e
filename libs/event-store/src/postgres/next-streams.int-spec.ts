import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { nextStreams } from './expire-streams.sql';

describe('nextStreams (the retention pass walks a week of the log by stream key)', () => {
  let db: TestDatabase;
  const runStream = (i: number): string => `run-run_${i.toString(16).padStart(32, '0')}`;
  const names = [
    ...Array.from({ length: 40 }, (_, i) => `s${String(i + 1).padStart(3, '0')}`),
    ...Array.from({ length: 3 }, (_, i) => runStream(i + 1)),
  ];
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.pool.query('CREATE TABLE rows_of (stream_key bytea, n int, PRIMARY KEY (stream_key, n))');
    // Streams of 1 to 7 rows, so that batches of 5 rows end inside streams.
    await db.pool.query(
      `INSERT INTO rows_of SELECT es_stream_key(s.name), n FROM unnest($1::text[]) WITH ORDINALITY AS s(name, i),
              generate_series(1, 1 + s.i::int % 7) n`,
      [names],
    );
  });
  afterAll(() => db.drop());

  it('gives every stream once, by name, in key order, in batches that end inside a stream', async () => {
    const seen: string[] = [];
    let batches = 0;
    for (let after: Buffer = Buffer.alloc(0); ; batches++) {
      const streams = await nextStreams(db.pool, 'rows_of', after, 5);
      if (streams.length === 0) break;
      expect(streams.length).toBeLessThanOrEqual(5);
      seen.push(...streams.map((s) => s.name));
      after = streams.at(-1)!.key;
    }
    // A run's stream is kept as a zero byte and its id's 16 bytes: those sort first.
    expect(seen).toEqual([...names.slice(40), ...names.slice(0, 40)]);
    expect(batches).toBeGreaterThan(8);
  });
});
