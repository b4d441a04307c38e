import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { openBenchServer } from './bench-database';
import type { ChartFile } from './charts';
import { peerComparison, type BenchSuite } from './compare/peer-comparison.suite';
import { FULL, QUICK, type Sizes } from './compare/scenario';
import { claimLatency } from './claim-latency.suite';
import { scheduleSpike } from './schedule-spike.suite';
import { rebuild } from './rebuild.suite';
import { scaleOut } from './scale-out.suite';
import { DEFAULT_SERVER_COUNTS, runServersSuite } from './run-servers.suite';
import { soak } from './soak.suite';
import { storage } from './storage.suite';

/**
 * `npm run bench`: the suites below, one after another, on one PostgreSQL
 * server (DATABASE_URL's, or an embedded one). A script, not a test: it
 * bounds its own time and exits by itself. Its options are USAGE's
 * (`--help` prints them). Exits non-zero when a repetition failed, its log
 * check included.
 */
const USAGE = `npm run bench -- [options]   (or node dist/bench/compare.bench.js [options] after npm run build)

  --quick            small counts, one repetition: a smoke run
  --only=a,b         only these scenarios (bulk, drain, sustained, timeliness, ceiling, schedule-spike,
                     claim-latency, rebuild, storage, scale-out)
  --systems=a,b      only systems whose label contains one of these (chronicle, split, graphile-worker,
                     pg-boss, tuned, defaults), or \`=label\` for that one alone (\`=chronicle\`: the log inline only)
  --repetitions=N    each scenario N times per system instead of 3 (1 with --quick)
  --json             the figures as JSON on stdout instead of the table
  --charts=DIR       also the peer comparison's charts as SVG files in DIR (bench/charts.ts), e.g.
                     --charts=docs/bench; none without it
  --keep-seed        the rebuild suite keeps its seeded log for the next run, and uses a kept one
  --soak=MINUTES     the soak: sustained load on ours for that long; alone, unless --only names more
  --servers=1,2,3    the drain with the shards' runs on that many PostgreSQL servers of this machine
                     (docs/sharding.md); alone, unless --only names more (--only=servers: 1,2,3)
  --help             this text, and nothing run
`;
const SUITES_BEFORE_SERVERS: readonly BenchSuite[] = [
  peerComparison,
  scheduleSpike,
  claimLatency,
  rebuild,
  soak,
  storage,
  scaleOut,
];
/** Suites that run only when --only names them: long, and measuring what the others do not race on. */
const ON_DEMAND: ReadonlySet<string> = new Set([soak.name, storage.name, scaleOut.name, 'servers']);
const TIME_LIMIT_MS = { full: 45 * 60_000, quick: 5 * 60_000 };
/** Beyond its minutes, the soak's start, backlog, stop and log audit. */
const SOAK_MARGIN_MS = 5 * 60_000;

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes('--help')) {
    process.stdout.write(USAGE);
    return 0;
  }
  const quick = args.includes('--quick');
  const json = args.includes('--json');
  const soakMinutes = soakArg(args);
  const servers = serversArg(args);
  const only = withServers(withSoak(listArg(args, 'only'), soakMinutes), servers);
  const SUITES = [...SUITES_BEFORE_SERVERS, runServersSuite(servers ?? DEFAULT_SERVER_COUNTS)];
  const systems = listArg(args, 'systems');
  const repetitions = repetitionsArg(args);
  const chartsDir = chartsArg(args);
  const known = new Set(SUITES.flatMap((s) => s.scenarios));
  const unknown = only?.filter((name) => !known.has(name)) ?? [];
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${[...known].join(', ')}`);

  // A hung system must not hold the bench forever; exiting kills the child processes.
  const timeLimitMs =
    (quick ? TIME_LIMIT_MS.quick : TIME_LIMIT_MS.full) +
    (soakMinutes === undefined ? 0 : soakMinutes * 60_000 + SOAK_MARGIN_MS);
  setTimeout(() => {
    process.stderr.write(`bench: over the time limit of ${Math.round(timeLimitMs / 60_000)} min, giving up\n`);
    process.exit(2);
  }, timeLimitMs).unref();

  const server = await openBenchServer();
  const reports: Array<{ suite: string; json: unknown }> = [];
  const failures: string[] = [];
  const charts: ChartFile[] = [];
  const caption =
    `${quick ? 'A --quick run' : 'A full run'} on ${new Date().toISOString().slice(0, 10)}, ` +
    `${availableParallelism()} cores, Node ${process.version}.`;
  try {
    for (const suite of SUITES) {
      // The soak and the storage run only when asked for: a run without --only is every other suite.
      const asked =
        only === undefined ? !ON_DEMAND.has(suite.name) : suite.scenarios.some((name) => only.includes(name));
      if (!asked) continue;
      const report = await suite.run(server, {
        sizes: withRepetitions(quick ? QUICK : FULL, repetitions),
        only: only === undefined ? undefined : new Set(only),
        systems,
        progress: (line) => process.stderr.write(`bench ${suite.name}: ${line}\n`),
        soakMinutes,
        keepSeed: args.includes('--keep-seed'),
      });
      reports.push({ suite: suite.name, json: report.json });
      failures.push(...(report.failures ?? []));
      if (chartsDir !== undefined) charts.push(...(report.charts?.(caption) ?? []));
      if (!json) report.print(process.stdout);
    }
  } finally {
    await server.stop();
  }
  if (json) process.stdout.write(JSON.stringify(reports, null, 2) + '\n');
  if (chartsDir !== undefined) await writeCharts(chartsDir, charts);
  for (const failure of failures) process.stderr.write(`bench: FAILED ${failure}\n`);
  return failures.length === 0 ? 0 : 1;
}

/** --charts=DIR: where the SVG charts go, or undefined (none). */
function chartsArg(args: readonly string[]): string | undefined {
  const dir = argValue(args, 'charts');
  if (args.includes('--charts') || dir === '') throw new Error('--charts takes a directory: --charts=docs/bench');
  return dir;
}

async function writeCharts(dir: string, charts: readonly ChartFile[]): Promise<void> {
  if (charts.length === 0) process.stderr.write('bench: no charts: none of the suites that ran draws any\n');
  await mkdir(dir, { recursive: true });
  for (const chart of charts) {
    const file = path.join(dir, `${chart.name}.svg`);
    await writeFile(file, chart.svg);
    process.stderr.write(`bench: chart ${file}\n`);
  }
}

/** --repetitions=N: how many times each scenario runs on each system (for an A/B of two builds), or undefined. */
function repetitionsArg(args: readonly string[]): number | undefined {
  return numberArg(args, 'repetitions', 'a whole number from 1', (n) => Number.isInteger(n) && n >= 1);
}

function withRepetitions(sizes: Sizes, repetitions: number | undefined): Sizes {
  return repetitions === undefined ? sizes : { ...sizes, repetitions };
}

/** --soak=MINUTES: a positive number of minutes (10 or more meant), or undefined. */
function soakArg(args: readonly string[]): number | undefined {
  return numberArg(args, 'soak', 'a positive number of minutes', (n) => Number.isFinite(n) && n > 0);
}

/** The soak runs alone unless --only names more; --only=soak needs its minutes. */
function withSoak(only: string[] | undefined, soakMinutes: number | undefined): string[] | undefined {
  if (soakMinutes === undefined) {
    if (only?.includes(soak.name) === true) throw new Error('--only=soak needs --soak=MINUTES');
    return only;
  }
  return [...new Set([...(only ?? []), soak.name])];
}

/** --servers=1,2,3: how many servers the `servers` suite spreads the shards over, each run in turn. */
function serversArg(args: readonly string[]): number[] | undefined {
  const counts = listArg(args, 'servers')?.map(Number);
  if (counts !== undefined && (counts.length === 0 || counts.some((n) => !Number.isInteger(n) || n < 1 || n > 8)))
    throw new Error('--servers takes server counts from 1 to 8: --servers=1,2,3');
  return counts;
}

/** The servers suite runs alone unless --only names more. */
function withServers(only: string[] | undefined, servers: number[] | undefined): string[] | undefined {
  return servers === undefined ? only : [...new Set([...(only ?? []), 'servers'])];
}

function listArg(args: readonly string[], name: string): string[] | undefined {
  return argValue(args, name)
    ?.split(',')
    .filter((s) => s !== '');
}

/** --NAME=N as a number `valid` accepts (otherwise an error saying it takes `what`), or undefined. */
function numberArg(
  args: readonly string[],
  name: string,
  what: string,
  valid: (n: number) => boolean,
): number | undefined {
  const value = argValue(args, name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!valid(n)) throw new Error(`--${name} takes ${what}: --${name}=${value}`);
  return n;
}

/** What follows `--NAME=`, or undefined. */
function argValue(args: readonly string[], name: string): string | undefined {
  return args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

main().then(
  // Peers' timers (pg-boss's monitors) may outlive their stop(): the bench ends here regardless.
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
