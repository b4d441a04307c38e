import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
// By path, and only modules that import nothing by package name: jest loads its global setup outside its
// module map, where @chronicle/... do not resolve.
import { startEmbeddedPostgres } from '../libs/platform/src/database/embedded-postgres';
import { migrate } from '../libs/platform/src/database/migrate';
import { openScratchServer, type ScratchServer } from '../libs/platform/src/database/scratch-server';
import { TEST_ENV, databaseUrl } from './test-environment';

declare global {
  var __scratchServer: ScratchServer | undefined;
}

/**
 * Tests use DATABASE_URL when set, an embedded PostgreSQL otherwise. Either
 * way a template database is migrated once; each test file clones it.
 */
export default async function globalSetup(): Promise<void> {
  const server = await openScratchServer('scheduler-test-pg-', { unsafeFast: true });
  globalThis.__scratchServer = server;
  const serverUrl = server.url;
  if (server.embedded)
    process.stdout.write(`
DATABASE_URL unset: tests run on an embedded PostgreSQL (${new URL(serverUrl).host})
`);
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
