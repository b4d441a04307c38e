import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { projectRoot } from '../project-root';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Arbitrary but fixed: every process that migrates this database takes the same lock. */
const MIGRATION_LOCK_KEY = 7_346_912_001;

export const MIGRATIONS_DIR = path.join(projectRoot(), 'migrations');

/** migrations/schema.sql: the schema the migrations leave, for people to read (schema-snapshot.ts); never applied. */
export const SCHEMA_SNAPSHOT_FILE = 'schema.sql';

/** Numbered forward-only files: `0001_event_store.sql`, `0002_...`. */
export async function loadMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.sql') && f !== SCHEMA_SNAPSHOT_FILE).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = /^(\d+)_([\w-]+)\.sql$/.exec(file);
    if (match === null) throw new Error(`migration file ${file} is not named NNNN_name.sql`);
    migrations.push({
      version: Number(match[1]),
      name: match[2] ?? file,
      sql: await fs.readFile(path.join(dir, file), 'utf8'),
    });
  }
  migrations.forEach((m, i) => {
    if (i > 0 && m.version === migrations[i - 1]?.version) throw new Error(`two migrations share version ${m.version}`);
  });
  return migrations;
}

/**
 * Apply the pending migrations in order, each in its own transaction and
 * recorded in schema_migrations. A session advisory lock makes processes that
 * start together take turns: the second finds everything applied.
 */
export async function migrate(connectionString: string, dir?: string): Promise<number[]> {
  const migrations = await loadMigrations(dir);
  const client = new Client({ connectionString, application_name: 'scheduler-migrate' });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    const done: number[] = [];
    for (const migration of migrations.filter((m) => !applied.has(m.version))) {
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${migration.version}_${migration.name} failed: ${(err as Error).message}`, {
          cause: err,
        });
      }
      done.push(migration.version);
    }
    return done;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}
