import { Pool } from 'pg';
import { createEmptyDatabase } from '@chronicle/testing';
import { nextStreams } from './dated-partitions';

describe('nextStreams (the retention passes walk a partition by stream)', () => {
  let db: Awaited<ReturnType<typeof createEmptyDatabase>>;
  let pool: Pool;
  beforeAll(async () => {
    db = await createEmptyDatabase();
    pool = new Pool({ connectionString: db.url, max: 1 });
    pool.on('error', () => undefined);
    await pool.query('CREATE TABLE rows_of (stream_id text COLLATE "C", n int, PRIMARY KEY (stream_id, n))');
    // Streams of 1 to 7 rows, so that batches of 5 rows end inside streams.
    await pool.query(
      `INSERT INTO rows_of SELECT 's' || lpad(s::text, 3, '0'), n FROM generate_series(1, 40) s, generate_series(1, 1 + s % 7) n`,
    );
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('gives every stream once, in order, in batches that end inside a stream', async () => {
    const seen: string[] = [];
    let batches = 0;
    for (let after = ''; ; batches++) {
      const ids = await nextStreams(pool, 'rows_of', after, 5);
      if (ids.length === 0) break;
      expect(ids.length).toBeLessThanOrEqual(5);
      seen.push(...ids);
      after = ids.at(-1)!;
    }
    expect(seen).toEqual(Array.from({ length: 40 }, (_, i) => `s${String(i + 1).padStart(3, '0')}`));
    expect(batches).toBeGreaterThan(8);
  });

  it('reads only the rows `where` selects', async () => {
    expect(await nextStreams(pool, 'rows_of', 's010', 100, 'n > 6')).toEqual(['s013', 's020', 's027', 's034']);
  });
});
