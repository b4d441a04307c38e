import type { Pool } from 'pg';
import { CLAIM_SQL, claimReadyRuns } from '@chronicle/commands';
import { type Priority, perGroupLimit, DEFAULT_PRIORITY_WEIGHTS } from '@chronicle/domain';
import { PostgresEventStore } from '@chronicle/event-store';
import { createPool, withTransaction, migrate } from '@chronicle/platform';
import { runDecisions, seedRuns, testJob } from '@chronicle/testing';
import type { BenchServer } from './bench-database';
import type { BenchSuite, SuiteOptions } from './compare/peer-comparison.suite';
import { formatCount, formatTable, quantile } from './table';

/**
 * `npm run bench -- --only=claim-latency`: how long one claim of
 * 10 runs takes with 10,000 and with 1,000,000 ready runs across 50 teams
 * on one shared queue, leased by a platform worker token through the full
 * dispatch policy (priorities, team round-robin, concurrency headroom). The
 * claim must not slow down with the backlog: the target is the 1,000,000
 * figure within 2x of the 10,000 one. Each claim is a committed transaction
 * (lock, read, append RunLeased, write rows), timed from BEGIN to COMMIT.
 * Concurrency keys are in use: every second team's job leases one run per
 * key at a time (perKeyConcurrency 1), its runs of KEYS keys in turn, so the
 * claims count the leased runs of their keys as they go.
 */
const TEAMS = 50;
const QUEUE = 'shared';
const CLAIMS = 300;
const CLAIM_SIZE = 10;
const SEED_BATCH = 5000;
const PRIORITIES: readonly Priority[] = ['critical', 'default', 'bulk'];
const BACKLOGS = { full: [10_000, 1_000_000], quick: [10_000, 100_000] };
/** The concurrency keys of each keyed job. */
const KEYS = 1_000;

interface Backlog {
  readyRuns: number;
  seedSeconds: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /**
   * Shared buffers the claim statement touched (EXPLAIN ANALYZE, BUFFERS): its cost, independent of
   * the machine's noise.
   */
  claimBuffers: number;
  /** The statement's scans of tables, from its plan: index scans only, whatever the backlog. */
  scans: string[];
}

export const claimLatency: BenchSuite = {
  name: 'claims',
  scenarios: ['claim-latency'],
  run: async (server, options) => {
    const backlogs: Backlog[] = [];
    for (const readyRuns of options.sizes.repetitions === 1 ? BACKLOGS.quick : BACKLOGS.full)
      backlogs.push(await measure(server, readyRuns, options));
    return {
      print: (out) => out.write(formatReport(server.description, backlogs)),
      json: { server: server.description, claims: CLAIMS, claimSize: CLAIM_SIZE, teams: TEAMS, backlogs },
    };
  },
};

async function measure(server: BenchServer, readyRuns: number, options: SuiteOptions): Promise<Backlog> {
  const db = await server.createDatabase('scheduler_bench_claims');
  await migrate(db.url);
  const pool = createPool({ connectionString: db.url, max: 4, applicationName: 'bench-claims' });
  const store = new PostgresEventStore(pool);
  try {
    options.progress(`claim latency: seeding ${formatCount(readyRuns)} ready runs across ${TEAMS} teams`);
    const seedSeconds = await seed(pool, store, readyRuns + CLAIMS * CLAIM_SIZE);
    const worker = { kind: 'worker', team: null, queues: [QUEUE] } as const;
    const request = { queues: [QUEUE], max: CLAIM_SIZE, waitSeconds: 0, leaseSeconds: 300, workerId: 'bench' };
    const { buffers: claimBuffers, scans } = await explainClaim(pool);
    const latencies: number[] = [];
    const decisions = runDecisions(store, pool);
    for (let i = 0; i < CLAIMS; i++) {
      const started = process.hrtime.bigint();
      const { leases } = await decisions.unitOfWork((work) =>
        claimReadyRuns(work, worker, request, DEFAULT_PRIORITY_WEIGHTS, TEAMS),
      );
      latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (leases.length !== CLAIM_SIZE) throw new Error(`claim ${i} leased ${leases.length} runs, not ${CLAIM_SIZE}`);
    }
    options.progress(`claim latency at ${formatCount(readyRuns)}: p50 ${quantile(latencies, 0.5).toFixed(2)} ms`);
    return {
      readyRuns,
      seedSeconds,
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      maxMs: Math.max(...latencies),
      claimBuffers,
      scans,
    };
  } finally {
    await pool.end();
    await db.drop();
  }
}

/** 50 teams granted the shared queue, one job each (priorities in turn), their runs due over the last hour. */
async function seed(pool: Pool, store: PostgresEventStore, runs: number): Promise<number> {
  const started = Date.now();
  const teams = Array.from({ length: TEAMS }, (_, i) => `team-${String(i).padStart(2, '0')}`);
  await pool.query('INSERT INTO teams (id) SELECT unnest($1::text[])', [teams]);
  await pool.query('INSERT INTO queue_grants (queue, team) SELECT $1, unnest($2::text[])', [QUEUE, teams]);
  const keyed = (i: number): boolean => i % 2 === 1;
  const jobs = teams.map((team, i) =>
    testJob({
      name: `${team}.work`,
      team,
      queue: QUEUE,
      priority: PRIORITIES[i % PRIORITIES.length]!,
      ...(keyed(i) ? { perKeyConcurrency: 1 } : {}),
    }),
  );
  const hourAgo = Date.now() - 3_600_000;
  for (let done = 0; done < runs; done += SEED_BATCH) {
    const batch = Array.from({ length: Math.min(SEED_BATCH, runs - done) }, (_, k) => {
      const n = done + k;
      return {
        job: jobs[n % TEAMS]!,
        runId: `run_${n}`,
        dueAt: new Date(hourAgo + Math.floor((n / runs) * 3_000_000)),
        ...(keyed(n % TEAMS) ? { concurrencyKey: `key-${Math.floor(n / TEAMS) % KEYS}` } : {}),
      };
    });
    await seedRuns(pool, store, done === 0 ? jobs : [], batch);
  }
  await pool.query('VACUUM ANALYZE runs, jobs, queue_grants');
  return (Date.now() - started) / 1000;
}

/**
 * The claim statement under EXPLAIN (ANALYZE, BUFFERS), rolled back: the shared buffers it touched,
 * and its scans of tables.
 */
async function explainClaim(pool: Pool): Promise<{ buffers: number; scans: string[] }> {
  return withTransaction(pool, async (tx) => {
    const values = [
      [QUEUE],
      null,
      CLAIM_SIZE,
      PRIORITIES,
      PRIORITIES.map((p) => DEFAULT_PRIORITY_WEIGHTS[p]),
      perGroupLimit(CLAIM_SIZE, TEAMS),
      [], // no reserved runs
      0, // no prefetch
    ];
    const { rows } = await tx.query<{
      'QUERY PLAN': Array<{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }>;
    }>({ text: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${CLAIM_SQL}`, values });
    const plan = rows[0]!['QUERY PLAN'][0]!.Plan;
    const { rows: text } = await tx.query<{ 'QUERY PLAN': string }>({
      text: `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${CLAIM_SQL}`,
      values,
    });
    const scans = text
      .map((r) => r['QUERY PLAN'].trim().replace(/^->\s*/, ''))
      .filter((line) => /Scan on (runs|jobs|queue_grants)|Scan using/.test(line));
    await tx.query('ROLLBACK');
    await tx.query('BEGIN');
    return { buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'], scans };
  });
}

function formatReport(server: string, backlogs: readonly Backlog[]): string {
  const [small, large] = [backlogs[0]!, backlogs[backlogs.length - 1]!];
  const ratio = (pick: (b: Backlog) => number): number => pick(large) / pick(small);
  const ms = (n: number): string => n.toFixed(2);
  return (
    `\nclaim latency benchmark on ${server}\n` +
    `${CLAIMS} claims of ${CLAIM_SIZE} runs each by a platform worker on one queue shared by ${TEAMS} teams (priorities mixed), each claim a committed transaction;\n` +
    `every second team's job at perKeyConcurrency 1, its runs of ${formatCount(KEYS)} concurrency keys in turn\n\n` +
    formatTable([
      ['ready runs', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'claim statement buffers', 'seeded in (s)'],
      ...backlogs.map((b) => [
        formatCount(b.readyRuns),
        ms(b.p50Ms),
        ms(b.p99Ms),
        ms(b.maxMs),
        formatCount(b.claimBuffers),
        b.seedSeconds.toFixed(0),
      ]),
    ]) +
    `\n${formatCount(large.readyRuns)} vs ${formatCount(small.readyRuns)}: p50 ${ratio((b) => b.p50Ms).toFixed(2)}x, p99 ${ratio((b) => b.p99Ms).toFixed(2)}x ` +
    `(target: within 2x: ${ratio((b) => b.p50Ms) <= 2 && ratio((b) => b.p99Ms) <= 2 ? 'met' : 'NOT met'}); buffers ${ratio((b) => b.claimBuffers).toFixed(2)}x\n` +
    `the claim statement's scans at ${formatCount(large.readyRuns)} ready runs (EXPLAIN ANALYZE; loops are per queue, team and priority):\n` +
    [...new Set(large.scans)].map((line) => `  ${line}\n`).join('')
  );
}
