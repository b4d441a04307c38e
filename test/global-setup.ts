import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
// By path, and only modules that import nothing by package name: jest loads its global setup outside its
// module map, where @chronicle/... do not resolve.
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../libs/platform/src/database/embedded-postgres';
import { migrate } from '../libs/platform/src/database/migrate';
import { TEST_ENV, databaseUrl } from './test-environment';

declare global {
  var __embeddedPostgres: EmbeddedPostgres | undefined;
  var __embeddedDataDir: string | undefined;
}

/**
 * Tests use DATABASE_URL when set, an embedded PostgreSQL otherwise. Either
 * way a template database is migrated once; each test file clones it.
 */
export default async function globalSetup(): Promise<void> {
  let serverUrl = process.env['DATABASE_URL'];
  if (serverUrl === undefined || serverUrl === '') {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'scheduler-test-pg-'));
    await chmod(dataDir, 0o755); // as root the server runs as 'postgres', which must enter it
    globalThis.__embeddedPostgres = await startEmbeddedPostgres({ dataDir, ephemeral: true, unsafeFast: true });
    globalThis.__embeddedDataDir = dataDir;
    serverUrl = globalThis.__embeddedPostgres.connectionString;
    process.stdout.write(`\nDATABASE_URL unset: tests run on an embedded PostgreSQL (${dataDir})\n`);
  }
  const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const template = `sched_tpl_${runId}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${template}`);
  } finally {
    await admin.end();
  }
  await migrate(databaseUrl(serverUrl, template));
  await startRestartablePostgres();
  process.env[TEST_ENV.adminUrl] = serverUrl;
  process.env[TEST_ENV.templateDatabase] = template;
  process.env[TEST_ENV.runId] = runId;
}

/**
 * The restart test's own server. Started here, outside jest's module sandbox
 * (embedded-postgres is an ES module); the test restarts it with pg_ctl and
 * global-teardown.ts stops it the same way.
 */
async function startRestartablePostgres(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'scheduler-test-restartable-pg-'));
  await chmod(dataDir, 0o755);
  const server = await startEmbeddedPostgres({ dataDir, unsafeFast: true });
  await migrate(server.connectionString);
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { pg_ctl: string };
  process.env[TEST_ENV.restartableUrl] = server.connectionString;
  process.env[TEST_ENV.restartableDataDir] = path.join(dataDir, 'pg');
  process.env[TEST_ENV.pgCtl] = binaries.pg_ctl;
}
