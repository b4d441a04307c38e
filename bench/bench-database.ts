import type { Pool } from 'pg';
import { adminQuery, createPool, migrate, openScratchServer } from '@chronicle/platform';

export interface BenchDatabase {
  readonly url: string;
  /** Where the figures come from, for the report. */
  readonly server: string;
  drop(): Promise<void>;
}

/** A scratch database of a BenchServer. */
export interface ScratchDatabase {
  readonly url: string;
  /**
   * Resolves true once nobody is connected to it, false if someone still is
   * at the deadline. A backend flushes its table statistics as it exits, so
   * after this they hold everything the system that used it did.
   */
  waitUntilIdle(timeoutMs?: number): Promise<boolean>;
  /** Drops it once it is idle (see dropWhenIdle). */
  drop(): Promise<void>;
}

export interface BenchServer {
  /** Where the figures come from, for the report. */
  readonly description: string;
  /** A new empty database on this server; drop() removes it. */
  createDatabase(prefix: string): Promise<ScratchDatabase>;
  /** The database of this name, created if missing: one kept between runs (drop() still removes it). */
  openDatabase(name: string): Promise<ScratchDatabase>;
  stop(): Promise<void>;
}

/**
 * The server in use: DATABASE_URL's when set, else a durable (fsync on)
 * embedded PostgreSQL that stop() deletes.
 */
export async function openBenchServer(): Promise<BenchServer> {
  // pg_stat_statements counts each system's statements (round trips) for the cost-per-run block.
  const server = await openScratchServer('scheduler-bench-pg-', {
    settings: ['shared_preload_libraries=pg_stat_statements'],
  });
  const kind = server.embedded ? 'embedded PostgreSQL (fsync on)' : 'DATABASE_URL';
  const adminUrl = server.url;
  // The settings that decide what a run costs and whether the figures hold over time, in every table's header.
  const [settings] = await adminQuery(
    adminUrl,
    `SELECT current_setting('server_version') AS version, current_setting('autovacuum') AS autovacuum,
            current_setting('synchronous_commit') AS synchronous_commit, current_setting('fsync') AS fsync,
            current_setting('shared_buffers') AS shared_buffers`,
  );
  let created = 0;
  return {
    description:
      `${kind}, PostgreSQL ${String(settings?.['version'])} (autovacuum ${String(settings?.['autovacuum'])}, ` +
      `synchronous_commit ${String(settings?.['synchronous_commit'])}, fsync ${String(settings?.['fsync'])}, ` +
      `shared_buffers ${String(settings?.['shared_buffers'])})`,
    createDatabase: async (prefix) => {
      // Unique within this process and across runs: a crashed run may leave one behind.
      const name = `${prefix}_${Date.now().toString(36)}_${created++}`;
      await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
      return scratchDatabase(adminUrl, name);
    },
    openDatabase: async (name) => {
      const found = await adminQuery(adminUrl, `SELECT 1 FROM pg_database WHERE datname = '${name}'`);
      if (found.length === 0) await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
      return scratchDatabase(adminUrl, name);
    },
    stop: () => server.stop(),
  };
}

function scratchDatabase(adminUrl: string, name: string): ScratchDatabase {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    waitUntilIdle: (timeoutMs) => waitUntilIdle(adminUrl, name, timeoutMs),
    drop: () => dropWhenIdle(adminUrl, name),
  };
}

/** A migrated scratch database on a server of its own (see openBenchServer), deleted by drop(). */
export async function createBenchDatabase(): Promise<BenchDatabase> {
  const server = await openBenchServer();
  try {
    const db = await server.createDatabase('scheduler_bench');
    await migrate(db.url);
    return {
      url: db.url,
      server: server.description,
      drop: async () => {
        await db.drop();
        await server.stop();
      },
    };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/**
 * Drops a scratch database once the connections of the system that used it
 * are gone (pools close asynchronously); past a deadline, WITH (FORCE)
 * closes what is left, which every pool here survives.
 */
async function dropWhenIdle(adminUrl: string, name: string): Promise<void> {
  await waitUntilIdle(adminUrl, name);
  await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

async function waitUntilIdle(adminUrl: string, name: string, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const connected = async (): Promise<number> =>
    Number(
      (await adminQuery(adminUrl, `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = '${name}'`))[0]?.['n'],
    );
  while ((await connected()) > 0) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

/**
 * `work` on a pool of one on `url`, ended afterwards: for the bench's own
 * reads of a scratch database. Like every pool here it survives the
 * database being dropped under it (createPool's 'error' listeners).
 */
export async function withPool<T>(url: string, applicationName: string, work: (pool: Pool) => Promise<T>): Promise<T> {
  const pool = createPool({ connectionString: url, max: 1, applicationName });
  try {
    return await work(pool);
  } finally {
    await pool.end();
  }
}
