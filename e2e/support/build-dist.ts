import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { TEST_ENV } from '@chronicle/testing';

const root = path.resolve(__dirname, '../..');
const LOCK = path.join(root, 'dist', '.build.lock');
/** The test run whose build dist/ holds: built once per run, never under a running process's feet. */
const STAMP = path.join(root, 'dist', '.build.run');
/** The same for dist/dashboard (outside it: vite empties it). */
const DASHBOARD_STAMP = path.join(root, 'dist', '.dashboard.run');
const STALE_MS = 300_000;

/**
 * What `npm run build` does to the TypeScript (compile, then resolve our package names to paths in
 * dist/), for tests that run the built processes: once per test run, so that no test file rebuilds dist/
 * while another one's processes load it.
 */
export function buildDist(): Promise<void> {
  return oncePerRun(STAMP, () => {
    for (const bin of ['typescript/bin/tsc', 'tsc-alias/dist/bin/index.js'])
      execFileSync(process.execPath, [path.join(root, 'node_modules', bin), '-p', 'tsconfig.build.json'], {
        cwd: root,
        stdio: 'pipe',
      });
  });
}

/**
 * What `npm run build` does for the dashboard: `vite build` into dist/dashboard, which the API serves
 * (read once as it starts). Once per test run as well: vite empties the folder first, and an API
 * started meanwhile would find no dashboard (503).
 */
export function buildDashboard(): Promise<void> {
  return oncePerRun(DASHBOARD_STAMP, () =>
    execFileSync(
      process.execPath,
      [path.join(root, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'apps/dashboard/vite.config.mjs'],
      { cwd: root, stdio: 'pipe' },
    ),
  );
}

/** A build done once per test run: jest's workers share it (a lock file, waited for, then a stamp with the run's id). */
async function oncePerRun(stamp: string, build: () => void): Promise<void> {
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
    if (existsSync(stamp) && readFileSync(stamp, 'utf8') === run) return;
    build();
    writeFileSync(stamp, run);
  } finally {
    rmSync(LOCK, { force: true });
  }
}
