import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ApiModule } from '@chronicle/api';
import { createTestDatabase, type TestDatabase } from '@chronicle/testing';
import type { OpenApiDocument } from './support/openapi-document';
import { startApp, type RunningApp } from './support/start-app';

const run = promisify(execFile);
const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const CLIENT_DIR = join(__dirname, 'openapi-client');
const GENERATED = join(CLIENT_DIR, 'generated');
const GENERATOR = join(dirname(require.resolve('@hey-api/openapi-ts/package.json')), 'bin', 'run.js');
const TSC = require.resolve('typescript/bin/tsc');

/** The steps of e2e/openapi-client/lifecycle.ts, each a test here, in order: each builds on the one before. */
type Step =
  | 'createTeamAndTokens'
  | 'defineJobs'
  | 'pauseResumeAndRun'
  | 'deadLetterReplayAndDiscard'
  | 'cancelARun'
  | 'batchAndBackfill'
  | 'typedProblems';
type Lifecycle = Record<Step, () => Promise<void>>;

/**
 * What a client developer does with /docs-json: generate a typed client from it (@hey-api/openapi-ts,
 * its fetch client), compile their code against it, and drive the API with it. The client is generated
 * from the running server's document into e2e/openapi-client/generated/ (git-ignored); tsc checks the
 * lifecycle code against it and builds it, and the built code runs against the same server over HTTP.
 */
describe('a client generated from the live /docs-json', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let document: OpenApiDocument;
  let steps: Lifecycle;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule], ADMIN_TOKEN);
    document = (await (await fetch(`${app.url}/docs-json`)).json()) as OpenApiDocument;
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('generates with @hey-api/openapi-ts, and the lifecycle code type-checks against what it generated', async () => {
    await rm(GENERATED, { recursive: true, force: true });
    await run(process.execPath, [
      GENERATOR,
      '--input',
      `${app.url}/docs-json`,
      '--output',
      join(GENERATED, 'chronicle'),
      '--client',
      '@hey-api/client-fetch',
      '--silent',
      '--no-log-file',
    ]);
    // Type errors (and unused @ts-expect-error probes) fail here, with tsc's output as the message.
    const compiled = await run(process.execPath, [TSC, '-p', join(CLIENT_DIR, 'tsconfig.json')]).then(
      () => '',
      (err: { stdout?: string; message: string }) => err.stdout || err.message,
    );
    expect(compiled).toBe('');
    const built = join(GENERATED, 'build', 'openapi-client', 'lifecycle.js');
    const { lifecycle } = (await import(built)) as {
      lifecycle: (url: string, adminToken: string, document: OpenApiDocument) => Lifecycle;
    };
    steps = lifecycle(app.url, ADMIN_TOKEN, document);
  }, 120_000);

  it('an admin creates a team, its tokens, a shared queue and quotas', () => steps.createTeamAndTokens());
  it('a team defines the nightly export and other jobs, and previews schedules', () => steps.defineJobs());
  it('a paused job is not leased; resumed, its run is leased, heartbeaten and completed', () =>
    steps.pauseResumeAndRun());
  it('a failing run goes to the DLQ, is replayed, fails again and is discarded', () =>
    steps.deadLetterReplayAndDiscard());
  it('a scheduled run is cancelled, and cannot be twice', () => steps.cancelARun());
  it('runs are enqueued in a batch and backfilled, twice without doubling', () => steps.batchAndBackfill());
  it('refusals come back as typed problem details', () => steps.typedProblems());
});
