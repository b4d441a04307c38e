import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../libs/platform/src/database/embedded-postgres';
import { migrate } from '../libs/platform/src/database/migrate';

export interface BenchDatabase {
  readonly url: string;
  /** Where the figures come from, for the report. */
  readonly server: string;
  drop(): Promise<void>;
}

/**
 * A scratch database on the server in use: DATABASE_URL's when set, else a
 * durable (fsync on) embedded PostgreSQL that is deleted afterwards.
 */
export async function createBenchDatabase(): Promise<BenchDatabase> {
  let serverUrl = process.env['DATABASE_URL'];
  let stopServer = async (): Promise<void> => undefined;
  let server = 'DATABASE_URL';
  if (serverUrl === undefined || serverUrl === '') {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'scheduler-bench-pg-'));
    await chmod(dataDir, 0o755);
    const embedded = await startEmbeddedPostgres({ dataDir, ephemeral: true });
    serverUrl = embedded.connectionString;
    stopServer = () => embedded.stop();
    server = 'embedded PostgreSQL (fsync on)';
  }
  const name = `scheduler_bench_${Date.now().toString(36)}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  const version = await adminQuery(serverUrl, 'SHOW server_version');
  return {
    url: url.toString(),
    server: `${server}, PostgreSQL ${String(version[0]?.['server_version'])}`,
    drop: async () => {
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await stopServer();
    },
  };
}

async function adminQuery(serverUrl: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}
