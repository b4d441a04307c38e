import { randomBytes } from 'node:crypto';
import { Client, type Pool } from 'pg';
import { createPool } from '@chronicle/platform';
import { TEST_ENV, databaseUrl } from './test-environment';

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  readonly pool: Pool;
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own, cloned from the run's template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = requiredEnv(TEST_ENV.adminUrl);
  const template = requiredEnv(TEST_ENV.templateDatabase);
  const name = `sched_t_${requiredEnv(TEST_ENV.runId)}_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name} TEMPLATE ${template}`);
  const url = databaseUrl(serverUrl, name);
  const pool = createPool({ connectionString: url, max: 20, applicationName: 'scheduler-test' });
  return {
    url,
    name,
    pool,
    drop: async () => {
      await pool.end();
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined)
    throw new Error(`${name} is not set: run the tests with jest (test/global-setup.ts sets it)`);
  return value;
}

/** An empty database (no migrations), for tests of the migrator itself. */
export async function createEmptyDatabase(): Promise<Omit<TestDatabase, 'pool'>> {
  const serverUrl = requiredEnv(TEST_ENV.adminUrl);
  const name = `sched_e_${requiredEnv(TEST_ENV.runId)}_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  return {
    url: databaseUrl(serverUrl, name),
    name,
    drop: () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
