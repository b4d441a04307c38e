import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { createEmptyDatabase } from '@chronicle/testing';
import { loadMigrations, migrate } from './migrate';

describe('migrations', () => {
  let db: Awaited<ReturnType<typeof createEmptyDatabase>>;
  beforeEach(async () => {
    db = await createEmptyDatabase();
  });
  afterEach(() => db.drop());

  async function query<T>(sql: string): Promise<T[]> {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      return (await client.query(sql)).rows as T[];
    } finally {
      await client.end();
    }
  }

  it('applies every migration once, in order, even when several processes start at once', async () => {
    const results = await Promise.all([migrate(db.url), migrate(db.url), migrate(db.url), migrate(db.url)]);
    const all = (await loadMigrations()).map((m) => m.version);
    // Exactly one process applied them; the others found nothing to do.
    expect(results.filter((r) => r.length > 0)).toEqual([all]);
    expect(
      (await query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map(
        (r) => r.version,
      ),
    ).toEqual(all);
    expect(await migrate(db.url)).toEqual([]);
  });

  it('rolls a failing migration back whole and stops there', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'migrations-'));
    await writeFile(path.join(dir, '0001_good.sql'), 'CREATE TABLE good (id int);');
    await writeFile(path.join(dir, '0002_bad.sql'), 'CREATE TABLE half (id int); SELECT no_such_function();');
    await writeFile(path.join(dir, '0003_later.sql'), 'CREATE TABLE later (id int);');
    await expect(migrate(db.url, dir)).rejects.toThrow(/migration 2_bad failed/);
    const tables = (
      await query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
    ).map((r) => r.tablename);
    expect(tables).toEqual(['good', 'schema_migrations']);
  });
});
