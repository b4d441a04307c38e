import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { findFreePort } from '@chronicle/platform';
import { waitUntilHealthy } from '../wait-healthy';

const root = path.resolve(__dirname, '../../..');
/** `npm run start:api`: the built API alone (dist/, see build-dist.ts), no scheduler or projector beside it. */
const API_MAIN = path.join(root, 'dist/apps/api/src/main.js');

export interface ApiProcess {
  readonly url: string;
  /** Why the process is gone (its exit code or signal), undefined while it runs. */
  exited(): string | undefined;
  /** What it printed, stdout and stderr, for a failure's message. */
  output(): string;
  /** SIGTERM, then SIGKILL if it has not exited within a few seconds. */
  stop(): Promise<void>;
}

/** The built API as a deployment runs it, in a process of its own on a free port: a crash is seen as an exit. */
export async function startApiProcess(env: Readonly<Record<string, string>>): Promise<ApiProcess> {
  const port = await findFreePort();
  const child = spawn(process.execPath, [API_MAIN], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let printed = '';
  // Only the last part: a long run's warnings must not grow without bound.
  const keep = (chunk: Buffer): void => void (printed = (printed + chunk.toString()).slice(-20_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exit: string | undefined;
  const gone = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = signal === null ? `exit code ${code}` : `signal ${signal}`;
      resolve();
    }),
  );
  const api: ApiProcess = {
    url: `http://127.0.0.1:${port}`,
    exited: () => exit,
    output: () => printed,
    stop: async () => {
      if (exit !== undefined) return;
      child.kill('SIGTERM');
      const killed = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(killed);
    },
  };
  try {
    await waitUntilHealthy(api.url, {
      exitedWith: () => (exit === undefined ? undefined : printed),
      output: api.output,
    });
  } catch (err) {
    await api.stop();
    throw err;
  }
  return api;
}
