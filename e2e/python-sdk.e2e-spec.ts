import { execFile, execFileSync } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ApiModule } from '@chronicle/api';
import { SchedulerModule } from '@chronicle/scheduler';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { startApp, type RunningApp } from './support/start-app';

const ADMIN_TOKEN = 'e2e-admin-token-python-sdk-0123456789';
const ROOT = path.resolve(__dirname, '..');
const SDK_DIR = path.join(ROOT, 'sdks', 'python');
const PYTHON = 'python3';
const run = promisify(execFile);

/** Why the Python tests cannot run here (no python3, or no pytest for it), or undefined when they can. */
function pythonMissing(): string | undefined {
  try {
    execFileSync(PYTHON, ['-m', 'pytest', '--version'], { stdio: 'pipe', timeout: 30_000 });
    return undefined;
  } catch (error) {
    return `\`${PYTHON} -m pytest --version\` failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

const missing = pythonMissing();
if (missing !== undefined) console.log(`e2e/python-sdk skipped: ${missing}`);
const describeWithPython = missing === undefined ? describe : describe.skip;

/** A command's output; on failure, an error with all of it. */
async function output(file: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  try {
    const { stdout, stderr } = await run(file, args, { ...options, timeout: 110_000, maxBuffer: 16 * 1024 * 1024 });
    return `${stdout}${stderr}`;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed: ${String(error)}\n${stdout}\n${stderr}`, { cause: error });
  }
}

/**
 * sdks/python as a Python user gets it: pip-installed from the folder into a fresh virtual environment
 * (which sees the machine's pytest), then its pytest suite against the real app, whose URL and admin
 * token it gets in its environment. The install builds from a copy, so the checkout gets no build/ or
 * *.egg-info; pytest writes no cache or bytecode into it either.
 */
describeWithPython('sdks/python: the Python worker SDK, installed with pip, against the running app', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let workDir: string;
  let venvPython: string;

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(tmpdir(), 'chronicle-python-sdk-'));
    venvPython = path.join(workDir, 'venv', 'bin', 'python');
    // Independent steps side by side: the SDK's install and the app.
    const [, started] = await Promise.all([
      (async () => {
        const copy = path.join(workDir, 'sdk');
        await cp(SDK_DIR, copy, {
          recursive: true,
          filter: (source) => !/(__pycache__|\.egg-info|\.pytest_cache|[/\\]build)$/.test(source),
        });
        await output(PYTHON, ['-m', 'venv', '--system-site-packages', path.join(workDir, 'venv')]);
        await output(venvPython, ['-m', 'pip', 'install', '--no-deps', '--disable-pip-version-check', copy]);
      })(),
      (async () => {
        db = await createTestDatabase();
        return startApp(db.pool, db.eventStore, [ApiModule, SchedulerModule], ADMIN_TOKEN);
      })(),
    ]);
    app = started;
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await db?.drop();
    if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
  });

  it('installs as the package chronicle-worker, typed, with no dependencies', async () => {
    const shown = await output(venvPython, ['-m', 'pip', 'show', '--files', 'chronicle-worker']);
    expect(shown).toMatch(/^Name: chronicle-worker$/m);
    expect(shown).toMatch(/^Requires: *$/m);
    expect(shown).toContain('chronicle_worker/py.typed');
    expect(shown).toContain('chronicle_worker/aio.py');
  });

  it('passes its pytest suite against the running app', async () => {
    const result = await run(venvPython, ['-m', 'pytest', 'tests', '-p', 'no:cacheprovider', '-q', '-rA'], {
      cwd: SDK_DIR,
      env: {
        ...process.env,
        CHRONICLE_URL: app.url,
        CHRONICLE_ADMIN_TOKEN: ADMIN_TOKEN,
        PYTHONDONTWRITEBYTECODE: '1',
      },
      timeout: 110_000,
      maxBuffer: 16 * 1024 * 1024,
    }).then(
      ({ stdout, stderr }) => ({ code: 0, printed: `${stdout}${stderr}` }),
      (error: { code?: number; stdout?: string; stderr?: string; message: string }) => ({
        code: error.code ?? -1,
        printed: `${error.message}\n${error.stdout ?? ''}${error.stderr ?? ''}`,
      }),
    );
    if (result.code !== 0) console.log(result.printed);
    expect(result).toMatchObject({ code: 0 });
    expect(result.printed).toMatch(/\d+ passed/);
    expect(result.printed).not.toMatch(/\d+ (skipped|failed|error)/);
  }, 120_000);
});
