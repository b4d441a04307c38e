import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(__dirname, '../..');
const LOCK = path.join(root, 'dist', '.build.lock');
const STALE_MS = 300_000;

/**
 * What `npm run build` does to the TypeScript (compile, then resolve our package names to paths in
 * dist/), for tests that run the built processes. One build at a time across jest's workers: a
 * lock file, waited for.
 */
export async function buildDist(): Promise<void> {
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
    for (const bin of ['typescript/bin/tsc', 'tsc-alias/dist/bin/index.js'])
      execFileSync(process.execPath, [path.join(root, 'node_modules', bin), '-p', 'tsconfig.build.json'], {
        cwd: root,
        stdio: 'pipe',
      });
  } finally {
    rmSync(LOCK, { force: true });
  }
}
