import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import { PostgresEventStore, type EventStore } from '@chronicle/event-store';
import { adminQuery, createPool } from '@chronicle/platform';
import { TEST_ENV, databaseUrl } from './test-environment';

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  /** The read models' database. */
  readonly pool: Pool;
  /** The event log's database: the read models' own, or with TEST_EVENT_LOG=split one of its own. */
  readonly log: Pool;
  /** `log`'s URL: EVENT_STORE_URL for a process of this mode (`url` itself when the log is inline). */
  readonly logUrl: string;
  /** The PostgreSQL event store on `log`, as the runtime would make it for this mode. */
  readonly eventStore: EventStore;
  drop(): Promise<void>;
}

/** `split`: every test file's event log lives in a database of its own (EVENT_STORE_URL's mode). */
export const TEST_EVENT_LOG = process.env['TEST_EVENT_LOG'] === 'split' ? 'split' : 'inline';

/**
 * A fresh, migrated database of its own, cloned from the run's template, and
 * (TEST_EVENT_LOG=split) a second one for the event log.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = requiredEnv(TEST_ENV.adminUrl);
  const template = requiredEnv(TEST_ENV.templateDatabase);
  const name = `sched_t_${requiredEnv(TEST_ENV.runId)}_${randomBytes(4).toString('hex')}`;
  const logName = TEST_EVENT_LOG === 'split' ? `${name}_log` : name;
  await adminQuery(serverUrl, `CREATE DATABASE ${name} TEMPLATE ${template}`);
  if (logName !== name) await adminQuery(serverUrl, `CREATE DATABASE ${logName} TEMPLATE ${template}`);
  const url = databaseUrl(serverUrl, name);
  const logUrl = databaseUrl(serverUrl, logName);
  const pool = createPool({ connectionString: url, max: 20, applicationName: 'scheduler-test' });
  const log =
    logName === name
      ? pool
      : createPool({
          connectionString: logUrl,
          max: 20,
          applicationName: 'scheduler-test-log',
        });
  return {
    url,
    name,
    pool,
    log,
    logUrl,
    eventStore: new PostgresEventStore(log),
    drop: async () => {
      await pool.end();
      if (log !== pool) await log.end();
      for (const database of new Set([name, logName]))
        await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    },
  };
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined)
    throw new Error(`${name} is not set: run the tests with jest (test/global-setup.ts sets it)`);
  return value;
}

/** An empty database (no migrations), for tests of the migrator itself. */
export async function createEmptyDatabase(): Promise<Pick<TestDatabase, 'url' | 'name' | 'drop'>> {
  const serverUrl = requiredEnv(TEST_ENV.adminUrl);
  const name = `sched_e_${requiredEnv(TEST_ENV.runId)}_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  return {
    url: databaseUrl(serverUrl, name),
    name,
    drop: async () => void (await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}
