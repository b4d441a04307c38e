import { Materialiser, soleNodeScope, type ShardScope } from '@chronicle/scheduler';
import { defineNewJobs } from '@chronicle/commands';
import type { JobDefinition } from '@chronicle/domain';
import { PostgresEventStore } from '@chronicle/event-store';
import { type Clock, createPool, migrate } from '@chronicle/platform';
import { runDecisions, testJob } from '@chronicle/testing';
import type { BenchServer } from './bench-database';
import type { BenchSuite, SuiteOptions } from './compare/peer-comparison.suite';
import { formatCount, formatTable, median, quantile } from './table';

/**
 * `npm run bench -- --only=schedule-spike`: the top-of-the-hour spike, scaled to
 * this machine. 50,000 hourly definitions with 60 s jitter, the scheduler in
 * its steady state (every cursor waiting for the hour); then the minute
 * before the hour, when all of them come due within the lookahead at once.
 *
 * The materialiser runs as the scheduler runs it (one pass: batches until
 * none is due), on a clock that starts 60 s
 * before the hour and moves with real time, so the hour need not be waited
 * for. A run is ready, that is claimable, once its batch has committed and
 * its due time has come: ready = max(due, commit). Reported per repetition
 * (the next hour each time, over a growing runs table): materialised runs/s
 * from the spike's first batch to its last commit, and (ready - due).
 */
const SIZES = { full: { jobs: 50_000, repetitions: 3 }, quick: { jobs: 5_000, repetitions: 1 } };
const JITTER_SECONDS = 60;
const LOOKAHEAD_SECONDS = 60;
const HOUR = 3_600_000;
const DEFINE_BATCH = 1000;
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kathmandu', 'Australia/Sydney'];

interface Spike {
  runs: number;
  seconds: number;
  runsPerSecond: number;
  /** ready - due, milliseconds. */
  lateness: { p50: number; p99: number; max: number };
  /** How long before its due time the last-committed run was ready (ms): the lookahead's margin. */
  minimumLeadMs: number;
  /** Runs due in each second of the minute after the hour: the jitter's spread. */
  perSecond: { min: number; max: number; seconds: number };
}

function definition(i: number): JobDefinition {
  const timeZone = ZONES[i % ZONES.length]!;
  return testJob({
    name: `fleet.job-${String(i).padStart(5, '0')}`,
    team: `team-${i % 50}`,
    queue: `queue-${i % 50}`,
    payload: { report: i },
    // Hourly in five zones, all firing at the top of the UTC hour: Kathmandu (+05:45) at a quarter to, local time.
    schedule: {
      cron: timeZone === 'Asia/Kathmandu' ? '45 * * * *' : '0 * * * *',
      timeZone,
      jitterSeconds: JITTER_SECONDS,
    },
  });
}

async function spike(materialiser: (clock: Clock) => Materialiser, scope: ShardScope, hour: number): Promise<Spike> {
  const startedReal = Date.now();
  const start = hour - LOOKAHEAD_SECONDS * 1000;
  const clock: Clock = { now: () => new Date(start + (Date.now() - startedReal)) };
  const scheduler = materialiser(clock);
  const lateness: number[] = [];
  const leads: number[] = [];
  const dueSeconds = new Map<number, number>();
  const began = process.hrtime.bigint();
  const runs = await scheduler.materialiseOnce(scope, (batch) => {
    const committed = clock.now().getTime();
    for (const run of batch.runs) {
      const due = Date.parse(run.dueAt);
      lateness.push(Math.max(0, committed - due));
      leads.push(due - committed);
      const second = Math.floor((due - hour) / 1000);
      dueSeconds.set(second, (dueSeconds.get(second) ?? 0) + 1);
    }
  });
  const seconds = Number(process.hrtime.bigint() - began) / 1e9;
  const counts = [...dueSeconds.values()];
  return {
    runs,
    seconds,
    runsPerSecond: runs / seconds,
    lateness: { p50: quantile(lateness, 0.5), p99: quantile(lateness, 0.99), max: Math.max(...lateness) },
    minimumLeadMs: Math.min(...leads),
    perSecond: { min: Math.min(...counts), max: Math.max(...counts), seconds: dueSeconds.size },
  };
}

export const scheduleSpike: BenchSuite = {
  name: 'schedules',
  scenarios: ['schedule-spike'],
  run: async (server, options) => {
    const r = await measure(server, options);
    return { print: (out) => out.write(formatReport(r)), json: r };
  },
};

async function measure(server: BenchServer, options: SuiteOptions): Promise<Report> {
  const { jobs, repetitions } = options.sizes.repetitions === 1 ? SIZES.quick : SIZES.full;
  const db = await server.createDatabase('scheduler_bench_spike');
  await migrate(db.url);
  const pool = createPool({ connectionString: db.url, max: 4, applicationName: 'bench-schedules' });
  const store = new PostgresEventStore(pool);
  const materialiser = (clock: Clock): Materialiser =>
    new Materialiser(runDecisions(store, pool), pool, clock, LOOKAHEAD_SECONDS);
  try {
    // The one scheduler node, granted every shard.
    const scope = await soleNodeScope(pool);
    const defineStarted = Date.now();
    for (let i = 0; i < jobs; i += DEFINE_BATCH) {
      const batch = Array.from({ length: Math.min(DEFINE_BATCH, jobs - i) }, (_, k) => definition(i + k));
      await store.unitOfWork(pool, (uow) => defineNewJobs(uow, batch, 'bench'));
    }
    const defineSeconds = (Date.now() - defineStarted) / 1000;
    // Steady state: the scheduler first saw the jobs half an hour before the first spike's hour.
    const firstHour = Math.ceil(Date.now() / HOUR) * HOUR + HOUR;
    const steadyStarted = process.hrtime.bigint();
    await materialiser({ now: () => new Date(firstHour - HOUR / 2) }).materialiseOnce(scope);
    const steadySeconds = Number(process.hrtime.bigint() - steadyStarted) / 1e9;
    await pool.query('VACUUM ANALYZE schedule_cursors, jobs');
    const quietStarted = process.hrtime.bigint();
    const quietRuns = await materialiser({ now: () => new Date(firstHour - HOUR / 4) }).materialiseOnce(scope);
    const quietMs = Number(process.hrtime.bigint() - quietStarted) / 1e6;

    const spikes: Spike[] = [];
    for (let r = 0; r < repetitions; r++) {
      options.progress(`schedule spike ${r + 1}/${repetitions}: ${jobs} jobs due at once`);
      spikes.push(await spike(materialiser, scope, firstHour + r * HOUR));
      await materialiser({ now: () => new Date(firstHour + r * HOUR + 20 * 60_000) }).materialiseOnce(scope);
    }
    return { server: server.description, jobs, repetitions, defineSeconds, steadySeconds, quietMs, quietRuns, spikes };
  } finally {
    await pool.end();
    await db.drop();
  }
}

interface Report {
  server: string;
  jobs: number;
  repetitions: number;
  defineSeconds: number;
  steadySeconds: number;
  quietMs: number;
  quietRuns: number;
  spikes: Spike[];
}

function formatReport(r: Report): string {
  const rate = median(r.spikes.map((s) => s.runsPerSecond));
  const p99 = median(r.spikes.map((s) => s.lateness.p99));
  const range = (pick: (s: Spike) => number, digits = 0): string =>
    `${Math.min(...r.spikes.map(pick)).toFixed(digits)}–${Math.max(...r.spikes.map(pick)).toFixed(digits)}`;
  return (
    `\nschedule spike benchmark on ${r.server}\n` +
    `${formatCount(r.jobs)} hourly jobs (60 s jitter, 5 zones, all at the top of the UTC hour); ` +
    `defined in ${r.defineSeconds.toFixed(1)} s; first pass over all cursors ${r.steadySeconds.toFixed(2)} s; ` +
    `a pass with nothing due ${r.quietMs.toFixed(1)} ms (${r.quietRuns} runs)\n` +
    `${r.repetitions} spikes (one per hour, on a growing runs table), medians and min–max\n\n` +
    formatTable([
      ['measure', 'median', 'min–max', 'target', 'met'],
      [
        'runs materialised in the spike',
        formatCount(median(r.spikes.map((s) => s.runs))),
        range((s) => s.runs),
        '',
        '',
      ],
      ['materialised runs/s', formatCount(rate), range((s) => s.runsPerSecond), '≥ 5,000', rate >= 5000 ? 'yes' : 'NO'],
      ['spike duration (s)', median(r.spikes.map((s) => s.seconds)).toFixed(2), range((s) => s.seconds, 2), '', ''],
      [
        'ready - due p50 (ms)',
        formatCount(median(r.spikes.map((s) => s.lateness.p50))),
        range((s) => s.lateness.p50),
        '',
        '',
      ],
      ['ready - due p99 (ms)', formatCount(p99), range((s) => s.lateness.p99), '< 1,000', p99 < 1000 ? 'yes' : 'NO'],
      [
        'ready - due max (ms)',
        formatCount(median(r.spikes.map((s) => s.lateness.max))),
        range((s) => s.lateness.max),
        '',
        '',
      ],
      [
        'least lead before due (ms)',
        formatCount(median(r.spikes.map((s) => s.minimumLeadMs))),
        range((s) => s.minimumLeadMs),
        '',
        '',
      ],
      [
        'runs due per second of the minute',
        `${median(r.spikes.map((s) => s.perSecond.min))}–${median(r.spikes.map((s) => s.perSecond.max))}`,
        '',
        '',
        '',
      ],
      ['seconds of the minute with runs', String(median(r.spikes.map((s) => s.perSecond.seconds))), '', '60', ''],
    ])
  );
}
