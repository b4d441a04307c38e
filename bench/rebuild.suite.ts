import { execFile } from 'node:child_process';
import * as path from 'node:path';
import type { Pool } from 'pg';
import { PostgresEventStore, START } from '@chronicle/event-store';
import { createPool, migrate, projectRoot } from '@chronicle/platform';
import { PROJECTIONS } from '@chronicle/projections';
import type { BenchSuite, SuiteOptions } from './compare/peer-comparison.suite';
import type { BenchServer } from './bench-database';
import { seedRebuildLog } from './rebuild-seed';
import { formatCount, formatTable } from './table';

/**
 * `npm run bench -- --only=rebuild`: `projections rebuild <name>` of every projection, then
 * `projections verify`, on a log of 1,000,000 events (100,000 with --quick), each run by the CLI's
 * binary in a process of its own with its defaults, as an operator runs it. Target: 50,000 events/s each. The rebuilds go first: they also build the
 * live tables verify compares with (the seed writes only the log and the jobs' rows), so verify
 * must find 0 differences.
 *
 * --keep-seed: the seeded log is kept in database `scheduler_bench_rebuild_<events>` and used again
 * by the next run with the flag (seeding 1,000,000 events takes about a minute).
 */
const EVENTS = { full: 1_000_000, quick: 100_000 };
const TARGET = 50_000;

interface Timing {
  readonly what: string;
  readonly events: number;
  readonly seconds: number;
  readonly eventsPerSecond: number;
  readonly differences?: number;
}

export const rebuild: BenchSuite = {
  name: 'rebuild',
  scenarios: ['rebuild'],
  run: async (server, options) => {
    const events = options.sizes.repetitions === 1 ? EVENTS.quick : EVENTS.full;
    const { url, seedSeconds, drop } = await seededDatabase(server, events, options);
    const timings: Timing[] = [];
    const failures: string[] = [];
    try {
      for (const projection of PROJECTIONS) {
        options.progress(`rebuilding ${projection.name}`);
        const report = await chronicle<{ events: number; seconds: number }>(url, [
          'projections',
          'rebuild',
          projection.name,
        ]);
        timings.push(timingOf(`rebuild ${projection.name}`, report));
      }
      options.progress('verifying');
      const report = await chronicle<{ events: number; seconds: number; differences: unknown[] }>(url, [
        'projections',
        'verify',
      ]);
      timings.push({ ...timingOf('verify', report), differences: report.differences.length });
      if (report.differences.length > 0)
        failures.push(
          `verify after rebuilds: ${report.differences.length} differences, e.g. ${JSON.stringify(report.differences.slice(0, 3))}`,
        );
    } finally {
      await drop();
    }
    for (const t of timings)
      if (t.eventsPerSecond < TARGET)
        options.progress(
          `${t.what}: ${formatCount(t.eventsPerSecond)} events/s, under the target of ${formatCount(TARGET)}`,
        );
    return {
      print: (out) => out.write(formatReport(server.description, events, seedSeconds, timings)),
      json: { server: server.description, events, seedSeconds, target: TARGET, timings },
      failures,
    };
  },
};

/**
 * `npx chronicle <args> --json` against the database at `url`, as an operator runs it (a process of its
 * own, the binary's node flags): its answer. Exit code 1 (differences found) still answers.
 */
export async function chronicle<T>(url: string, args: readonly string[]): Promise<T> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: url };
  for (const name of ['EVENT_STORE', 'EVENT_STORE_URL', 'KURRENTDB_CONNECTION_STRING']) delete env[name];
  const bin = path.join(projectRoot(), 'bin', 'chronicle.js');
  const answer = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) =>
    execFile(bin, [...args, '--json'], { env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err !== null && typeof err.code !== 'number') reject(err);
      else resolve({ code: err === null ? 0 : Number(err.code), stdout, stderr });
    }),
  );
  if (answer.code !== 0 && answer.code !== 1)
    throw new Error(`chronicle ${args.join(' ')} exited ${answer.code}: ${answer.stderr.trim()}`);
  return JSON.parse(answer.stdout) as T;
}

function timingOf(what: string, report: { events: number; seconds: number }): Timing {
  return { what, events: report.events, seconds: report.seconds, eventsPerSecond: report.events / report.seconds };
}

/** A migrated database holding the seeded log: a kept one (--keep-seed) if it holds it already. */
export async function seededDatabase(
  server: BenchServer,
  events: number,
  options: SuiteOptions,
): Promise<{ url: string; seedSeconds: number | undefined; drop: () => Promise<void> }> {
  const db = options.keepSeed
    ? await server.openDatabase(`scheduler_bench_rebuild_${events}`)
    : await server.createDatabase('scheduler_bench_rebuild');
  await migrate(db.url);
  const pool = createPool({ connectionString: db.url, max: 2, applicationName: 'bench-rebuild-seed' });
  try {
    const store = new PostgresEventStore(pool);
    const present = await store.countEventsAfter(START, events + 1);
    if (present === events) {
      options.progress(`using the kept log of ${formatCount(events)} events`);
      return { url: db.url, seedSeconds: undefined, drop: async () => undefined };
    }
    if (present > 0) await emptyDatabase(pool);
    options.progress(`seeding ${formatCount(events)} events`);
    const started = Date.now();
    await seedRebuildLog(pool, store, events);
    await pool.query('VACUUM ANALYZE events');
    const seedSeconds = (Date.now() - started) / 1000;
    options.progress(`seeded in ${seedSeconds.toFixed(0)} s`);
    return { url: db.url, seedSeconds, drop: options.keepSeed ? async () => undefined : () => db.drop() };
  } finally {
    await pool.end();
  }
}

/** A kept database with some other log: emptied for a new seed. */
async function emptyDatabase(pool: Pool): Promise<void> {
  await pool.query('TRUNCATE events, jobs, schedule_cursors, projection_checkpoints');
  for (const projection of PROJECTIONS) await projection.reset(pool);
}

function formatReport(
  server: string,
  events: number,
  seedSeconds: number | undefined,
  timings: readonly Timing[],
): string {
  return (
    `\nrebuild benchmark on ${server}\n` +
    `a log of ${formatCount(events)} events (${seedSeconds === undefined ? 'kept from an earlier run' : `seeded in ${seedSeconds.toFixed(0)} s`}); target ${formatCount(TARGET)} events/s\n\n` +
    formatTable([
      ['command', 'events', 'seconds', 'events/s', 'target', 'differences'],
      ...timings.map((t) => [
        t.what,
        formatCount(t.events),
        t.seconds.toFixed(1),
        formatCount(t.eventsPerSecond),
        t.eventsPerSecond >= TARGET ? 'met' : 'NOT met',
        t.differences === undefined ? '' : String(t.differences),
      ]),
    ])
  );
}
