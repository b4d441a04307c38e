import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { streamKey } from './stream-key';

/** The adapter's keys are the log's: es_stream_key (migrations/0049) makes the same bytes, es_stream_name reads them back. */
describe('stream keys', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  const names = [
    'run-run_019ad3c0f1a28e3b9c4d5e6f70819a2b', // a run of today: 17 bytes
    'run-run_019AD3C0F1A28E3B9C4D5E6F70819A2B', // uppercase: as written
    'run-run_019ad3c0f1a28e3b9c4d5e6f70819a2', // 31 digits
    'run-run_019ad3c0f1a28e3b9c4d5e6f70819a2bc', // 33 digits
    'run-run_019ad3c0f1a28e3b9c4d5e6f70819a2g', // not hex
    'run-run_Zx3-kQ9aB_c7dE2fG1hJ4kL', // an older derived id
    'job-ops.sync',
    'team-ops',
    'job-cafés.ünïcode',
  ];

  it('are the same bytes in the adapter and in SQL, and read back as the name', async () => {
    const { rows } = await db.pool.query<{ name: string; key: Buffer; back: string }>(
      'SELECT n AS name, es_stream_key(n) AS key, es_stream_name(es_stream_key(n)) AS back FROM unnest($1::text[]) n',
      [names],
    );
    expect(rows.map((r) => [r.name, r.key.toString('hex'), r.back])).toEqual(
      names.map((n) => [n, streamKey(n).toString('hex'), n]),
    );
    expect(streamKey(names[0]!)).toHaveLength(17);
    expect(streamKey(names[1]!)).toHaveLength(40);
  });

  it('gives a name with a NUL, which no stream has, the empty key', () => {
    expect(streamKey('run-\0')).toHaveLength(0);
  });
});
