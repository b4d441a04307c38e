import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { findFreePort } from '@chronicle/platform';
import type { TestDatabase } from '@chronicle/testing';
import { waitUntilHealthy } from './wait-healthy';

const root = path.resolve(__dirname, '../..');

/** A built role's process (dist/, see buildDist) and what it printed. */
export interface RoleProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Its HTTP address (`http://127.0.0.1:<port>`). */
  readonly url: string;
  output(): string;
}

/**
 * `npm run start:<role>` as a deployment runs it (`server`: `npm start`, every role in one process), built: on the test's database (its own log with
 * TEST_EVENT_LOG=split), a free port, `env` besides; resolves once its /healthz answers.
 */
export async function startRole(
  role: 'api' | 'scheduler' | 'projector' | 'server',
  db: Pick<TestDatabase, 'url' | 'logUrl'>,
  env: Readonly<Record<string, string>> = {},
): Promise<RoleProcess> {
  const port = await findFreePort();
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    DATABASE_URL: db.url,
    LOG_LEVEL: 'info',
    ...env,
  };
  if (db.logUrl !== db.url) childEnv['EVENT_STORE_URL'] = db.logUrl;
  else delete childEnv['EVENT_STORE_URL'];
  const main = path.join(root, `dist/apps/${role}/src/main.js`);
  const child = spawn(process.execPath, [main], { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  await waitUntilHealthy(url, {
    exitedWith: () => (child.exitCode === null ? undefined : out),
    output: () => out,
  });
  return { child, pid: child.pid!, url, output: () => out };
}

/** Its exit code, once it has exited (null: ended by a signal). */
export function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Every process still running gets SIGCONT (a stopped one) and SIGTERM, and is waited for. */
export async function stopAll(processes: readonly RoleProcess[]): Promise<void> {
  for (const p of processes) {
    if (p.child.exitCode !== null || p.child.signalCode !== null) continue;
    p.child.kill('SIGCONT');
    p.child.kill('SIGTERM');
    await exited(p.child);
  }
}
