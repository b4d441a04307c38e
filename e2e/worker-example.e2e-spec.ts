import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase, waitFor } from '@chronicle/testing';
import type { ApiClient } from './support/api-client';
import { startApp, type RunningApp } from './support/start-app';
import { createTeam } from './support/team-tokens';

const ADMIN_TOKEN = 'e2e-admin-token-worker-example-0123456789';
const ROOT = path.resolve(__dirname, '..');
const SDK_DIR = path.join(ROOT, 'libs', 'worker-sdk');
const EXAMPLE_DIR = path.join(ROOT, 'examples', 'worker');
const run = promisify(execFile);

/**
 * npm as a user would run it in that folder: without the npm_* variables of
 * the npm (npx jest, npm test) this test may run under, which would point the
 * child at this repository's package (npm_config_local_prefix and friends).
 */
async function npm(cwd: string, args: readonly string[]): Promise<string> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^npm_/i.test(name) || /^npm_config_(cache|userconfig)$/i.test(name),
    ),
  );
  try {
    const { stdout } = await run('npm', [...args, '--no-audit', '--no-fund', '--no-update-notifier'], {
      cwd,
      env,
      timeout: 90_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(
      `npm ${args.join(' ')} in ${path.relative(ROOT, cwd)} failed: ${String(error)}\n${stdout}\n${stderr}`,
      { cause: error },
    );
  }
}

interface WorkerProcess {
  readonly child: ChildProcess;
  output(): string;
  stdoutLines(): string[];
  exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
}

function startExampleWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, [path.join(EXAMPLE_DIR, 'worker.js')], {
    cwd: EXAMPLE_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.on('exit', (code, signal) => (exited = { code, signal }));
  return {
    child,
    output: () => `stdout:\n${stdout}\nstderr:\n${stderr}`,
    stdoutLines: () => stdout.split('\n').filter((line) => line !== ''),
    exit: () => exited,
  };
}

/** waitFor, with what the worker printed in the error, and at once if it died. */
async function waitWhileRunning(
  worker: WorkerProcess,
  what: string,
  condition: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  try {
    await waitFor(async () => {
      const exited = worker.exit();
      if (exited !== undefined) throw new Error(`the worker exited (${JSON.stringify(exited)})`);
      return condition();
    }, timeoutMs);
  } catch (error) {
    throw new Error(`${what}: ${error instanceof Error ? error.message : String(error)}\n${worker.output()}`, {
      cause: error,
    });
  }
}

describe('examples/worker: a worker of its own, on the SDK installed by path', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    // Independent steps, side by side: the SDK's build, the example's install (a link to libs/worker-sdk,
    // nothing fetched: --offline fails rather than reach a registry) and the server.
    const [, , started] = await Promise.all([
      npm(SDK_DIR, ['run', 'build']),
      npm(EXAMPLE_DIR, ['install', '--offline', '--no-package-lock']),
      (async () => {
        db = await createTestDatabase();
        return startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
      })(),
    ]);
    app = started;
  }, 120_000);
  afterAll(async () => {
    if (worker !== undefined && worker.exit() === undefined) worker.child.kill('SIGKILL');
    await app?.close();
    await db?.drop();
  });

  it('packs as a package of its own: built JavaScript, type declarations and its README, no sources or test helpers', async () => {
    const [packed] = JSON.parse(await npm(SDK_DIR, ['pack', '--dry-run', '--json'])) as Array<{
      name: string;
      version: string;
      files: Array<{ path: string }>;
    }>;
    const files = packed!.files.map((file) => file.path).sort();
    expect(packed).toMatchObject({ name: '@chronicle/worker-sdk', version: '0.1.0' });
    expect(files).toEqual(
      expect.arrayContaining([
        'README.md',
        'package.json',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/worker.js',
        'dist/worker.d.ts',
      ]),
    );
    expect(files.filter((file) => !/^(README\.md|package\.json|dist\/[\w-]+\.(js|js\.map|d\.ts))$/.test(file))).toEqual(
      [],
    );
    expect(files.filter((file) => /testing|\.spec\./.test(file))).toEqual([]);
  });

  it('runs every enqueued run to succeeded, then stops on SIGTERM with exit code 0', async () => {
    const { team, workerToken }: { team: ApiClient; workerToken: string } = await createTeam(
      app.url,
      ADMIN_TOKEN,
      'example',
      ['example'],
    );
    expect(
      (
        await team.put('/v1/jobs/example.greet', {
          queue: 'example',
          retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
        })
      ).status,
    ).toBe(201);
    const payloads = [1, 2, 3].map((n) => ({ greet: `hello ${n}` }));
    const runIds: string[] = [];
    for (const payload of payloads) {
      const enqueued = await team.post<{ runId: string }>('/v1/jobs/example.greet/runs', { payload });
      expect(enqueued.status).toBe(201);
      runIds.push(enqueued.body.runId);
    }

    worker = startExampleWorker({ SCHEDULER_URL: app.url, SCHEDULER_TOKEN: workerToken, QUEUE: 'example' });
    const states = async (): Promise<string[]> =>
      Promise.all(runIds.map(async (id) => (await team.get<{ state: string }>(`/v1/runs/${id}`)).body.state));
    await waitWhileRunning(
      worker,
      'every run succeeded',
      async () => (await states()).every((state) => state === 'succeeded'),
      30_000,
    );

    // The handler saw each run, with its payload; the history shows this process leased it and it succeeded.
    const handled = worker
      .stdoutLines()
      .map((line) => JSON.parse(line) as { runId: string; payload: unknown; attempt: number });
    expect(handled.map((h) => h.runId).sort()).toEqual([...runIds].sort());
    for (const [i, runId] of runIds.entries()) {
      expect(handled.find((h) => h.runId === runId)).toMatchObject({ payload: payloads[i], attempt: 1 });
      const { body } = await team.get<{ events: Array<{ type: string; data: { workerId?: string } }> }>(
        `/v1/runs/${runId}/events`,
      );
      expect(body.events.map((e) => e.type)).toEqual(['RunScheduled', 'RunLeased', 'RunSucceeded']);
      expect(body.events[1]!.data.workerId).toBe(`example-worker-${worker.child.pid}`);
    }

    // Graceful shutdown: the SDK aborts its long poll, nothing is in flight, the process ends by itself.
    worker.child.kill('SIGTERM');
    const stopped = worker;
    try {
      await waitFor(() => stopped.exit() !== undefined, 15_000);
    } catch (error) {
      throw new Error(`the worker did not exit within 15 s of SIGTERM\n${stopped.output()}`, { cause: error });
    }
    expect(stopped.exit()).toEqual({ code: 0, signal: null });
    expect(stopped.output()).toContain('SIGTERM received');
    expect(stopped.output()).toContain('worker stopped');
  }, 60_000);
});
