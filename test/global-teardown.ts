import { execFileSync } from 'node:child_process';
import { rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { TEST_ENV } from './test-environment';

export default async function globalTeardown(): Promise<void> {
  const serverUrl = process.env[TEST_ENV.adminUrl];
  const runId = process.env[TEST_ENV.runId];
  if (serverUrl !== undefined && runId !== undefined && globalThis.__scratchServer?.embedded !== true) {
    // A shared server: leave no databases of this run behind.
    const admin = new Client({ connectionString: serverUrl });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE datname LIKE 'sched\\_%' AND datname LIKE $1`,
        [`%${runId}%`],
      );
      for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  }
  await globalThis.__scratchServer?.stop();
  stopRestartablePostgres();
}

/** pg_ctl, not the embedded handle: after a restart the server is no longer the child it started as. */
function stopRestartablePostgres(): void {
  const dataDir = process.env[TEST_ENV.restartableDataDir];
  const pgCtl = process.env[TEST_ENV.pgCtl];
  if (dataDir === undefined || pgCtl === undefined) return;
  const { uid, gid } = statSync(dataDir);
  try {
    execFileSync(pgCtl, ['-D', dataDir, '-m', 'fast', '-w', 'stop'], { uid, gid, stdio: 'ignore' });
  } catch {
    // already stopped
  }
  rmSync(path.dirname(dataDir), { recursive: true, force: true });
}
