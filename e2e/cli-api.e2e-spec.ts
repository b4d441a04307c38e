import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ApiModule } from '@chronicle/api';
import { ProjectorModule } from '@chronicle/projector';
import { findFreePort } from '@chronicle/platform';
import { createTestDatabase, waitFor, type TestDatabase } from '@chronicle/testing';
import { buildDist } from './support/build-dist';
import { chronicle } from './support/chronicle-cli';
import { createTeam, startApp, type RunningApp, type TeamClients } from './support';

const ADMIN_TOKEN = 'e2e-admin-token-cli-api-0123456789';

/** `npx chronicle` against a running server: what a team, an auditor and an operator type. */
describe('the chronicle CLI, API commands', () => {
  let db: TestDatabase;
  let app: RunningApp;
  let team: TeamClients;
  let dir: string;
  let env: Record<string, string | undefined>;
  const deadRuns: string[] = [];

  beforeAll(async () => {
    await buildDist();
    db = await createTestDatabase();
    app = await startApp(db.pool, db.eventStore, [ApiModule, ProjectorModule], ADMIN_TOKEN);
    team = await createTeam(app.url, ADMIN_TOKEN, 'cli', ['cli']);
    env = { CHRONICLE_URL: app.url, CHRONICLE_TOKEN: team.teamToken };
    dir = await mkdtemp(path.join(tmpdir(), 'chronicle-cli-'));
  }, 180_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await app?.close();
    await db?.drop();
  });

  it('defines a job from a file, lists, shows, pauses and resumes it, and previews its fire times', async () => {
    const file = path.join(dir, 'nightly.json');
    await writeFile(
      file,
      JSON.stringify({
        queue: 'cli',
        schedule: { cron: '0 2 * * *', timeZone: 'Europe/Berlin' },
        retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
      }),
    );
    const defined = await chronicle(['jobs', 'define', 'cli.nightly', '-f', file], env);
    expect(defined).toEqual({ code: 0, stdout: 'defined cli.nightly: version 1\n', stderr: '' });

    const listed = await chronicle(['jobs', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^name\s+team\s+queue\s+priority\s+version\s+paused\s+schedule$/);
    expect(listed.stdout).toMatch(/cli\.nightly\s+cli\s+cli\s+default\s+1\s+false\s+0 2 \* \* \* Europe\/Berlin/);
    const json = JSON.parse((await chronicle(['--json', 'jobs', 'list'], env)).stdout) as {
      items: Array<{ name: string }>;
    };
    expect(json.items.map((j) => j.name)).toEqual(['cli.nightly']);

    expect(JSON.parse((await chronicle(['jobs', 'show', 'cli.nightly'], env)).stdout)).toMatchObject({
      name: 'cli.nightly',
      version: 1,
    });
    expect((await chronicle(['jobs', 'pause', 'cli.nightly'], env)).stdout).toBe('cli.nightly: paused\n');
    expect((await chronicle(['jobs', 'resume', 'cli.nightly'], env)).stdout).toBe('cli.nightly: running\n');
    const preview = await chronicle(['--json', 'jobs', 'preview', 'cli.nightly', '--count', '3'], env);
    expect((JSON.parse(preview.stdout) as { fireTimes: string[] }).fireTimes).toHaveLength(3);
    const versions = await chronicle(['jobs', 'versions', 'cli.nightly'], env);
    expect(versions.stdout).toMatch(new RegExp(`^1\\s+\\S+\\s+${team.teamActor}\\s+name, team, queue, `, 'm'));
  });

  it('shows a run, its events and the run as of an instant', async () => {
    const run = await team.team.post<{ runId: string }>('/v1/jobs/cli.nightly/runs', {});
    const shown = JSON.parse((await chronicle(['runs', 'show', run.body.runId], env)).stdout) as { state: string };
    expect(shown.state).toBe('ready');
    const events = await chronicle(['runs', 'events', run.body.runId], env);
    expect(events.stdout).toMatch(new RegExp(`^0\\s+RunScheduled\\s+\\S+\\s+${team.teamActor}$`, 'm'));
    const before = await chronicle(['runs', 'as-of', run.body.runId, '2000-01-01T00:00:00Z'], env);
    expect(before.code).toBe(1);
    expect(before.stderr).toMatch(/^chronicle: GET \/v1\/runs\/\S+: not-found: /);
  });

  it('enqueues a run, one per unique key, and refuses a duplicate when asked to', async () => {
    await team.team.put('/v1/jobs/cli.sync', { queue: 'cli', unique: { scope: 'while-not-finished' } });
    const first = await chronicle(
      ['runs', 'enqueue', 'cli.sync', '--unique-key', 'acct-7', '--payload', '{"n":1}'],
      env,
    );
    expect(first.code).toBe(0);
    const [, runId] = /^enqueued (run_\S+) \(ready\)$/m.exec(first.stdout) ?? [];
    expect(runId).toBeDefined();
    const again = await chronicle(['runs', 'enqueue', 'cli.sync', '--unique-key', 'acct-7'], env);
    expect(again.stdout).toMatch(new RegExp(`^there already: ${runId} \\(ready\\)$`, 'm'));
    const refused = await chronicle(
      ['runs', 'enqueue', 'cli.sync', '--unique-key', 'acct-7', '--if-duplicate', 'reject'],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^chronicle: POST \/v1\/jobs\/cli\.sync\/runs: duplicate-run: run run_\S+ holds the unique key/m,
    );
    const shown = JSON.parse((await chronicle(['runs', 'show', runId!], env)).stdout) as { uniqueKey: string };
    expect(shown.uniqueKey).toBe('acct-7');
    const keyed = await chronicle(
      ['runs', 'enqueue', 'cli.sync', '--concurrency-key', 'acct-7', '--ordering-key', 'book-3', '--delay', '86400'],
      env,
    );
    const [, keyedId] = /^enqueued (run_\S+) \(scheduled\)$/m.exec(keyed.stdout) ?? [];
    expect(keyedId).toBeDefined();
    const keyedRun = JSON.parse((await chronicle(['runs', 'show', keyedId!], env)).stdout) as {
      concurrencyKey: string;
      orderingKey: string;
    };
    expect(keyedRun.concurrencyKey).toBe('acct-7');
    expect(keyedRun.orderingKey).toBe('book-3');
    // Out of the way of the lease counts below: cancelled, the key is free again.
    expect((await team.team.post(`/v1/runs/${runId}:cancel`)).status).toBe(200);
    expect(
      (await chronicle(['runs', 'enqueue', 'cli.sync', '--unique-key', 'acct-7', '--delay', '86400'], env)).stdout,
    ).toMatch(/^enqueued /);
  });

  it('enqueues with a debounce key: the waiting run of the key is moved and says when it is ready', async () => {
    // A day's debounce: the run stays out of the way of the lease counts below.
    await team.team.put('/v1/jobs/cli.reindex', { queue: 'cli', debounce: { seconds: 86_400 } });
    const first = await chronicle(['runs', 'enqueue', 'cli.reindex', '--debounce-key', 'doc-9', '--payload', '1'], env);
    const [, runId] = /^enqueued (run_\S+) \(scheduled\), ready at \S+Z$/m.exec(first.stdout) ?? [];
    expect(runId).toBeDefined();
    const again = await chronicle(['runs', 'enqueue', 'cli.reindex', '--debounce-key', 'doc-9', '--payload', '2'], env);
    expect(again.stdout).toMatch(new RegExp(`^debounced: ${runId} \\(scheduled\\), ready at \\S+Z$`, 'm'));
    const shown = JSON.parse((await chronicle(['runs', 'show', runId!], env)).stdout) as { debounceKey: string };
    expect(shown.debounceKey).toBe('doc-9');
    const refused = await chronicle(['runs', 'enqueue', 'cli.sync', '--debounce-key', 'doc-9'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/validation-error: debounceKey: job cli\.sync has no debounce/);
  });

  it('replays dead letters by a filter: counts them, wants a confirmation, then reports what it did', async () => {
    // A job without a schedule: its runs may all be leased at once (a cron job's overlap policy queues them).
    const retry = { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 };
    expect((await team.team.put('/v1/jobs/cli.adhoc', { queue: 'cli', retry })).status).toBe(201);
    const runs = await team.team.post<{ runs: Array<{ runId: string }> }>('/v1/runs:batch', {
      runs: Array.from({ length: 3 }, () => ({ job: 'cli.adhoc' })),
    });
    expect(runs.status).toBe(200);
    // The three and the run of the test before. A lease call answers with the runs it could lock then: with
    // the log apart, the projector may hold a new run's lock a moment longer than the call waits, so the
    // worker asks again, as a worker does.
    const leases: Array<{ runId: string; fencingToken: number }> = [];
    await waitFor(
      async () => {
        const { body } = await team.worker.post<{ leases: typeof leases }>('/v1/lease', { queues: ['cli'], max: 10 });
        leases.push(...body.leases);
        return leases.length >= 4;
      },
      { description: 'the four ready runs leased' },
    );
    const failed = await team.worker.post('/v1/runs:complete', {
      completions: leases.map(({ runId, fencingToken }) => ({
        runId,
        fencingToken,
        outcome: 'failure',
        error: 'disk full',
        retryable: true,
      })),
    });
    expect(failed.status).toBe(200);
    deadRuns.push(...leases.map((l) => l.runId));

    const listed = await chronicle(['dlq', 'list'], env);
    for (const runId of deadRuns) expect(listed.stdout).toContain(runId);

    const unconfirmed = await chronicle(['dlq', 'replay', '--error', 'DISK'], env);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toMatch(/replay 4 dead runs\? Not a terminal: add --yes/);
    const replayed = await chronicle(['dlq', 'replay', '--error', 'DISK', '--yes'], env);
    expect(replayed).toMatchObject({ code: 0, stdout: 'replayed 4 of 4; 0 changed meanwhile, skipped\n' });
    expect((await chronicle(['dlq', 'replay', '--yes'], env)).stdout).toBe('no dead run matches\n');
  });

  it('lists the audit trail, newest first, with actors', async () => {
    await waitFor(
      async () =>
        (
          JSON.parse((await chronicle(['--json', 'audit', '--type', 'RunReplayed'], env)).stdout) as {
            items: unknown[];
          }
        ).items.length === 4,
      { timeoutMs: 20_000, description: 'the replays in the audit index' },
    );
    const trail = await chronicle(['audit', '--type', 'RunReplayed', '--limit', '2'], env);
    expect(trail.code).toBe(0);
    expect(trail.stdout.split('\n').filter((l) => l.includes('RunReplayed'))).toHaveLength(2);
    expect(trail.stdout).toContain(team.teamActor);
    expect(trail.stderr).toMatch(/^more: --cursor \S+$/m);
  });

  it('backfills a schedule between two instants, once per fire time', async () => {
    const args = ['jobs', 'backfill', 'cli.nightly', '--from', '2026-03-01T00:00:00Z', '--to', '2026-03-04T00:00:00Z'];
    expect((await chronicle(args, env)).stdout).toBe('3 fire times: 3 runs enqueued, 0 there already\n');
    expect((await chronicle(args, env)).stdout).toBe('3 fire times: 0 runs enqueued, 3 there already\n');
  });

  it("shows, sets and removes a queue's cap with the admin's token, and refuses it to a team", async () => {
    const admin = { ...env, CHRONICLE_TOKEN: ADMIN_TOKEN };
    expect((await chronicle(['queues', 'limits', 'cli'], admin)).stdout).toBe('cli: no cap; no rate\n');
    const set = await chronicle(['queues', 'limits', 'cli', '--concurrency', '5'], admin);
    expect(set.stdout).toBe('cli: at most 5 runs leased at once; no rate\n');
    const shown = await chronicle(['--json', 'queues', 'limits', 'cli'], admin);
    expect(JSON.parse(shown.stdout)).toEqual({ queue: 'cli', concurrency: 5, rate: null });
    // A rate beside the cap: each change keeps what it does not name.
    const rated = await chronicle(['queues', 'limits', 'cli', '--rate', '100/minute', '--burst', '10'], admin);
    expect(rated.stdout).toBe('cli: at most 5 runs leased at once; at most 100 per minute, 10 at once\n');
    expect((await chronicle(['queues', 'limits', 'cli', '--no-rate'], admin)).stdout).toBe(
      'cli: at most 5 runs leased at once; no rate\n',
    );
    const badRate = await chronicle(['queues', 'limits', 'cli', '--rate', '100/week'], admin);
    expect([badRate.code, badRate.stderr]).toEqual([2, expect.stringMatching(/--rate: 100\/week is not a rate/)]);
    expect((await chronicle(['queues', 'limits', 'cli', '--no-cap'], admin)).stdout).toBe('cli: no cap; no rate\n');
    const refused = await chronicle(['queues', 'limits', 'cli', '--concurrency', '5'], env);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/forbidden/)]);
    const both = await chronicle(['queues', 'limits', 'cli', '--concurrency', '5', '--no-cap'], admin);
    expect(both.code).toBe(2);
  });

  it('exits 3 when the server cannot be reached', async () => {
    const url = `http://127.0.0.1:${await findFreePort()}`;
    const ran = await chronicle(['jobs', 'list'], { ...env, CHRONICLE_URL: url });
    expect(ran.code).toBe(3);
    expect(ran.stderr).toBe(`chronicle: cannot reach ${url}: ECONNREFUSED\n`);
  });

  it.each([
    [{ CHRONICLE_TOKEN: undefined }, ['jobs', 'list'], 2, /set CHRONICLE_TOKEN/],
    [{}, ['jobs', 'show', 'cli.missing'], 1, /not-found: job cli\.missing not found/],
    [{ CHRONICLE_TOKEN: 'sch_team_not-a-token' }, ['jobs', 'list'], 1, /unauthorized/],
    [{}, ['jobs', 'define', 'cli.x', '-f', '/nonexistent.json'], 2, /cannot read \/nonexistent\.json: ENOENT/],
  ])('exits with a code scripts can rely on: %p %p', async (changed, args, code, message) => {
    const ran = await chronicle(args, { ...env, ...changed });
    expect(ran.code).toBe(code);
    expect(ran.stderr).toMatch(message);
  });
});
