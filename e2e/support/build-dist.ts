import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { TEST_ENV } from '@chronicle/testing';

const root = path.resolve(__dirname, '../..');
const LOCK = path.join(root, 'dist', '.build.lock');
/** The test run whose build dist/ holds: built once per run, never under a running process's feet. */
const STAMP = path.join(root, 'dist', '.build.run');
const STALE_MS = 300_000;

/**
 * What `npm run build` does to the TypeScript (compile, then resolve our package names to paths in
 * dist/), for tests that run the built processes: once per test run (jest's workers share it: a
 * lock file, waited for, then a stamp with the run's id), so that no test file rebuilds dist/
 * while another one's processes load it.
 */
export async function buildDist(): Promise<void> {
  const run = process.env[TEST_ENV.runId] ?? String(process.pid);
  mkdirSync(path.dirname(LOCK), { recursive: true });
  const deadline = Date.now() + STALE_MS;
  for (;;) {
    try {
      closeSync(openSync(LOCK, 'wx'));
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`${LOCK} held for ${STALE_MS / 1000} s: remove it if no build runs`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === run) return;
    for (const bin of ['typescript/bin/tsc', 'tsc-alias/dist/bin/index.js'])
      execFileSync(process.execPath, [path.join(root, 'node_modules', bin), '-p', 'tsconfig.build.json'], {
        cwd: root,
        stdio: 'pipe',
      });
    writeFileSync(STAMP, run);
  } finally {
    rmSync(LOCK, { force: true });
  }
}
