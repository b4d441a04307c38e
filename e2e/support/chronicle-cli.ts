import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const CLI_ROOT = path.resolve(__dirname, '..', '..');
/** The package's bin, as `npx chronicle` runs it. */
export const CLI_BIN = path.join(CLI_ROOT, 'bin', 'chronicle.js');

export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The real binary with these arguments and this environment (a variable set to undefined is removed),
 * run by its `#!` line as `npx chronicle` runs it (its node flags included; `node` from PATH).
 */
export async function chronicle(args: readonly string[], env: Record<string, string | undefined>): Promise<Ran> {
  const childEnv = { ...process.env, ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete childEnv[key];
  try {
    const { stdout, stderr } = await run(CLI_BIN, [...args], { cwd: CLI_ROOT, env: childEnv });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
