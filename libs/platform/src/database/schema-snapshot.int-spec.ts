import { readFile } from 'node:fs/promises';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { SCHEMA_SNAPSHOT_PATH, readSchemaSnapshot, snapshotDifference } from './schema-snapshot';

/**
 * migrations/schema.sql is the schema the migrations leave: this test's database is freshly migrated
 * (cloned from the run's migrated template), so its snapshot is what the committed file must say.
 */
describe('migrations/schema.sql', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('is the schema the migrations leave', async () => {
    const actual = await readSchemaSnapshot(db.pool);
    const committed = await readFile(SCHEMA_SNAPSHOT_PATH, 'utf8').catch(() => '');
    if (committed === actual) return;
    const { rows } = await db.pool.query<{ version: string }>(`SELECT current_setting('server_version') AS version`);
    throw new Error(
      'a migration changed the schema: run npm run schema:snapshot and commit migrations/schema.sql\n' +
        `(this database is on PostgreSQL ${rows[0]?.version ?? '?'}; see migrations/README.md)\n\n` +
        (committed === '' ? `${SCHEMA_SNAPSHOT_PATH} is missing or empty` : snapshotDifference(committed, actual)),
    );
  });

  it('shows where a snapshot differs: the first differing lines, not the whole file', () => {
    const committed = ['-- head', 'CREATE TABLE a (', '  x int', ');', '', 'CREATE TABLE b ();', ''].join('\n');
    const actual = ['-- head', 'CREATE TABLE a (', '  x bigint', ');', '', 'CREATE TABLE b ();', ''].join('\n');
    expect(snapshotDifference(committed, actual)).toBe(
      [
        '@@ line 3 (- migrations/schema.sql, + the migrated database)',
        '  CREATE TABLE a (',
        '-   x int',
        '+   x bigint',
      ].join('\n'),
    );
    const long = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n');
    expect(snapshotDifference('', long, 3).split('\n')).toEqual([
      '@@ line 1 (- migrations/schema.sql, + the migrated database)',
      '- ',
      '+ line 0',
      '+ line 1',
      '+ line 2',
      '+ ... (27 lines more)',
    ]);
  });
});
