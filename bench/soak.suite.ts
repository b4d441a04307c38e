import type { Pool } from 'pg';
import { withPool } from './bench-database';
import { chronicle } from './compare/chronicle';
import type { BenchSuite, SuiteOptions } from './compare/peer-comparison.suite';
import { produceUntil } from './compare/producer';
import type { LogAudit, QueueSystem, RunsCounted, ScratchDatabases } from './compare/queue-system';
import { onFreshDatabases } from './compare/runner';
import { sleep, waitUntil } from './compare/scenario';
import { readDeadTuples } from './compare/table-stats.sql';
import { formatCount, formatTable } from './table';

/**
 * `npm run bench -- --soak=MINUTES` (10 or more meant; any positive number
 * to try it): the sustained scenario's load on our product (one producer,
 * batches of 100, at most 1,000 runs waiting, the workers running) for that
 * long. Does the throughput hold as the tables grow and autovacuum works
 * behind them? Per minute: handler starts/s, and at its end the dead tuples
 * of each of our tables (n_dead_tup: what autovacuum has yet to reclaim; a
 * second or so behind, as table statistics are). Target: the last minute
 * >= 0.9x the first. Afterwards the backlog is finished and the log audited
 * as after every scenario of the comparison.
 */
const MINUTE_MS = 60_000;
const TARGET_RATIO = 0.9;
/** After the load, the backlog (at most 1,000 runs) gets this long to finish. */
const SETTLE_MS = 60_000;
/** Always shown; any other table of ours once it has had dead tuples. */
const SHOWN_TABLES = ['runs', 'events'];

interface Minute {
  readonly minute: number;
  readonly seconds: number;
  readonly startsPerSecond: number;
  readonly deadTuples: Readonly<Record<string, number>>;
}

interface Soak {
  readonly minutes: readonly Minute[];
  readonly runs: RunsCounted;
  readonly log: LogAudit;
}

export const soak: BenchSuite = {
  name: 'soak',
  scenarios: ['soak'],
  async run(server, options) {
    const minutes = options.soakMinutes;
    if (minutes === undefined) throw new Error('the soak runs with --soak=MINUTES');
    options.progress(`${minutes} min of sustained load on ${chronicle.label}`);
    const result = await onFreshDatabases(
      server,
      (databases, waitUntilIdle) => {
        const system = chronicle.create();
        return soakOn(system, databases, waitUntilIdle, minutes, options);
      },
      'scheduler_bench_soak',
    );
    const first = result.minutes[0]!;
    const last = result.minutes[result.minutes.length - 1]!;
    const ratio = last.startsPerSecond / first.startsPerSecond;
    const targets = [
      {
        goal: `soak: the last minute >= ${TARGET_RATIO}x the first`,
        met: ratio >= TARGET_RATIO,
        detail: `${ratio.toFixed(2)}x (last ${formatCount(last.startsPerSecond)}, first ${formatCount(first.startsPerSecond)} starts/s)${result.minutes.length === 1 ? '; one minute only: first and last are the same' : ''}`,
      },
    ];
    const failures =
      result.log.missing > 0 ? [`soak ${chronicle.label}: the log lacks events: ${result.log.detail}`] : [];
    return {
      print: (out) => out.write(formatReport(server.description, minutes, result, targets, failures)),
      json: {
        server: server.description,
        minutes,
        perMinute: result.minutes,
        firstStartsPerSecond: first.startsPerSecond,
        lastStartsPerSecond: last.startsPerSecond,
        lastOverFirst: ratio,
        maxDeadTuples: maxDeadTuples(result.minutes),
        runs: result.runs,
        log: result.log,
        targets,
        failures,
      },
      failures,
    };
  },
};

async function soakOn(
  system: QueueSystem,
  databases: ScratchDatabases,
  waitUntilIdle: () => Promise<boolean>,
  minutes: number,
  options: SuiteOptions,
): Promise<Soak> {
  let started = 0;
  let sent = 0;
  let samples: Minute[] = [];
  try {
    await system.start(databases);
    await system.startWorkers(() => void started++);
    const startedAt = Date.now();
    const endAt = startedAt + minutes * MINUTE_MS;
    await withPool(databases.url, 'bench-soak-stats', async (stats) => {
      [sent, samples] = await Promise.all([
        produceUntil(system, endAt, () => started),
        sampleEachMinute(stats, startedAt, endAt, () => started, options.progress),
      ]);
    });
    const finished = await waitUntil(async () => (await system.countUnfinished()) === 0, Date.now() + SETTLE_MS, 100);
    if (!finished) options.progress(`the backlog did not finish within ${SETTLE_MS / 1000} s of the load`);
  } finally {
    await system.stop();
  }
  await waitUntilIdle();
  const runs = { sent, started };
  const log = await system.auditLog(runs);
  if (log === undefined) throw new Error(`${system.system} keeps no log to audit`);
  options.progress(`log audit: ${formatCount(log.checked)} runs checked, ${formatCount(log.missing)} missing events`);
  return { minutes: samples, runs, log };
}

/** At each minute's end (the last may be shorter): the starts of that minute, and every table's dead tuples. */
async function sampleEachMinute(
  stats: Pool,
  startedAt: number,
  endAt: number,
  started: () => number,
  progress: (line: string) => void,
): Promise<Minute[]> {
  const minutes: Minute[] = [];
  let from = startedAt;
  let startsBefore = 0;
  while (from < endAt) {
    // Waiting for a time, not for a condition.
    await sleep(Math.min(from + MINUTE_MS, endAt) - Date.now());
    const now = Date.now();
    const starts = started() - startsBefore;
    startsBefore += starts;
    const seconds = (now - from) / 1000;
    const minute = {
      minute: minutes.length + 1,
      seconds,
      startsPerSecond: starts / seconds,
      deadTuples: await readDeadTuples(stats),
    };
    minutes.push(minute);
    progress(
      `soak minute ${minute.minute}: ${formatCount(minute.startsPerSecond)} starts/s, dead tuples ` +
        SHOWN_TABLES.map((t) => `${t} ${formatCount(minute.deadTuples[t])}`).join(', '),
    );
    from = now;
  }
  return minutes;
}

/** The tables shown: ours that matter always, any other once it has had dead tuples. */
function shownTables(minutes: readonly Minute[]): string[] {
  const max = maxDeadTuples(minutes);
  return [...SHOWN_TABLES, ...Object.keys(max).filter((t) => !SHOWN_TABLES.includes(t) && max[t]! > 0)];
}

function maxDeadTuples(minutes: readonly Minute[]): Record<string, number> {
  const max: Record<string, number> = {};
  for (const minute of minutes)
    for (const [table, dead] of Object.entries(minute.deadTuples)) max[table] = Math.max(max[table] ?? 0, dead);
  return max;
}

function formatReport(
  server: string,
  minutes: number,
  soak: Soak,
  targets: ReadonlyArray<{ goal: string; met: boolean; detail: string }>,
  failures: readonly string[],
): string {
  const tables = shownTables(soak.minutes);
  const max = maxDeadTuples(soak.minutes);
  return (
    `\nsoak on ${server}\n` +
    `${minutes} min of the sustained load on ${chronicle.label}: one producer, batches of 100, at most 1,000 runs waiting; ` +
    `${formatCount(soak.runs.sent)} runs sent, ${formatCount(soak.runs.started)} started\n` +
    `dead tuples (n_dead_tup) at each minute's end\n\n` +
    formatTable([
      ['minute', 'starts/s', ...tables.map((t) => `dead ${t}`)],
      ...soak.minutes.map((m) => [
        `${m.minute}${m.seconds < 59 ? ` (${m.seconds.toFixed(0)} s)` : ''}`,
        formatCount(m.startsPerSecond),
        ...tables.map((t) => formatCount(m.deadTuples[t] ?? 0)),
      ]),
      ['max', '', ...tables.map((t) => formatCount(max[t] ?? 0))],
    ]) +
    `\nlog: ${formatCount(soak.log.checked)} runs checked, ${formatCount(soak.log.missing)} missing events (${soak.log.detail})\n` +
    `\ntargets\n` +
    targets.map((t) => `  ${t.met ? 'met    ' : 'NOT met'}  ${t.goal}: ${t.detail}\n`).join('') +
    (failures.length === 0 ? '' : `\nFAILED\n${failures.map((f) => `  ${f}\n`).join('')}`)
  );
}
