import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { Pool } from 'pg';
import { PostgresEventStore } from '@chronicle/event-store';
import { createLogger } from '@chronicle/platform';
import { ProjectionRunner, PROJECTIONS } from '@chronicle/projections';
import { catchUpUntil, createEmptyDatabase, seedRuns, testJob } from '@chronicle/testing';
import { buildDist } from './support/build-dist';
import { chronicle, CLI_BIN, CLI_ROOT } from './support/chronicle-cli';

const run = promisify(execFile);
const root = CLI_ROOT;
const bin = CLI_BIN;

describe('the chronicle CLI, operator commands (npx chronicle)', () => {
  let database: Awaited<ReturnType<typeof createEmptyDatabase>>;
  let env: Record<string, string | undefined>;
  let pool: Pool;

  beforeAll(async () => {
    await buildDist();
    database = await createEmptyDatabase();
    // The log in the read models' database, whatever the suite's mode: the CLI reads what it is told.
    env = { DATABASE_URL: database.url, EVENT_STORE_URL: undefined, EVENT_STORE: undefined };
    pool = new Pool({ connectionString: database.url, max: 2 });
    // An idle connection the server ends (57P01) is the pool's to replace, not an unhandled error of the file.
    pool.on('error', (error) => console.warn(`cli e2e: idle connection lost: ${error.message}`));
  }, 180_000);
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('migrates an empty database, then has nothing to do', async () => {
    const first = await chronicle(['migrate'], env);
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toMatch(/^applied 1, 2, 3, /);
    const again = await chronicle(['--json', 'migrate'], env);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ applied: [] });
  });

  it('rebuilds the runs from the log and verifies every projection: 0 differences, exit 0', async () => {
    const job = testJob({ name: 'cli.rebuilt' });
    const due = new Date(Date.now() - 1000);
    const store = new PostgresEventStore(pool);
    await seedRuns(
      pool,
      store,
      [job],
      Array.from({ length: 50 }, (_, n) => ({ job, runId: `cli_${n}`, dueAt: due })),
    );

    // What the server's projector would have done meanwhile.
    await catchUpUntil(new ProjectionRunner(store, pool, PROJECTIONS, createLogger('error')), 51);

    const rebuilt = await chronicle(['--json', 'projections', 'rebuild', 'runs'], env);
    expect(rebuilt.code).toBe(0);
    expect(JSON.parse(rebuilt.stdout)).toMatchObject({ projection: 'runs', events: 51 });
    const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM runs WHERE state = 'scheduled'");
    expect(rows[0]!.n).toBe(50);

    const status = await chronicle(['projections', 'status'], env);
    expect(status.code).toBe(0);
    expect(status.stdout.split('\n')[0]).toMatch(/^projection\s+version\s+storedVersion\s+commitPosition/);
    expect(status.stdout).toMatch(/\nruns\s+1\s+1\s+\d+/);

    const verified = await chronicle(['projections', 'verify'], env);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(
      new RegExp(`verified ${PROJECTIONS.length} projections over 51 events .*: 0 differences`),
    );
  });

  it('shows a progress bar with rate and ETA on a terminal, plain output otherwise', async () => {
    // util-linux's script(1) gives the command a pseudo-terminal, as a person's shell would.
    const script = '/usr/bin/script';
    if (!existsSync(script)) {
      console.warn(`progress bar test skipped: ${script} (util-linux) is not installed`);
      return;
    }
    const onTerminal = await run(script, ['-qec', `${bin} projections verify`, '/dev/null'], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: database.url, EVENT_STORE_URL: '', TERM: 'xterm' },
    });
    expect(onTerminal.stdout).toMatch(/verifying \[[\u2588\u2591]+\] \d+\/51 events \| \d+ events\/s \| ETA /);
    expect(onTerminal.stdout).toContain('0 differences');
    const piped = await chronicle(['projections', 'verify'], env);
    expect(piped.stderr).not.toMatch(/\u2588/);
  });

  it('exits 1 and lists the rows when a read model differs from the log', async () => {
    await pool.query("UPDATE runs SET attempt = 9 WHERE run_id = 'cli_3'");
    const verified = await chronicle(['projections', 'verify'], env);
    expect(verified.code).toBe(1);
    expect(verified.stdout).toMatch(/runs\s+different\s+\{"run_id": "cli_3"\}/);
    expect(verified.stderr).toContain('chronicle: 1 rows differ from the log');
    await chronicle(['projections', 'rebuild', 'runs'], env);
    expect((await chronicle(['projections', 'verify'], env)).code).toBe(0);
  });

  it('exits 2 with one line for a wrong command line or a missing setting', async () => {
    const unknown = await chronicle(['projections', 'rebuild', 'nonesuch'], env);
    expect(unknown).toMatchObject({ code: 2, stdout: '' });
    expect(unknown.stderr).toBe(`chronicle: no projection nonesuch: ${PROJECTIONS.map((p) => p.name).join(', ')}\n`);
    const noDatabase = await chronicle(['projections', 'status'], { DATABASE_URL: undefined });
    expect(noDatabase).toMatchObject({ code: 2, stderr: 'chronicle: DATABASE_URL is not set\n' });
    expect((await chronicle(['no-such-command'], env)).code).toBe(2);
  });

  it('exits 3 when the database cannot be reached', async () => {
    const down = await chronicle(['projections', 'status'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    expect(down.code).toBe(3);
    expect(down.stderr).toMatch(/^chronicle: .*ECONNREFUSED/);
  });
});
