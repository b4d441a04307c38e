import { perGroupLimit, PRIORITIES, type PresentRun, type PriorityWeights } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { LOCKED_RUN_COLUMNS, runFromRow, type RunRow, WAITING_SQL } from '@chronicle/projections';
import { limitKey, lockAndCountLimits, type RateBucket, takeRateTokens } from '../runs/job-limits.sql';

/**
 * Whose runs a claim may take: a team's worker token its team's; a platform worker token (team null)
 * every team granted the queues.
 */
export interface ClaimScope {
  readonly team: string | null;
  readonly queues: readonly string[];
  /** Teams the queues serve: the claim reads a share of the batch per team. */
  readonly teamsServed: number;
}

/**
 * Who a claim serves, as `served` (queue, team, weight): a team's worker its team in each queue; a
 * platform worker (team null) every team granted a queue, with its grant's weight. `grants` is where
 * the grants are read, as `g` (queue, team, weight): CLAIM_SQL reads the database's queue_grants,
 * CLAIM_CANDIDATES_SQL (claim-candidates.sql.ts) the control database's, which a server runs are kept on
 * has no copy of. Written out once, at load: each statement is fixed text.
 */
export function servedCte(grants: string): string {
  return `served AS (
    SELECT q.queue, coalesce($2, g.team) AS team, coalesce(g.weight, 1) AS weight
      FROM unnest($1::text[]) AS q(queue)
      LEFT JOIN ${grants} ON g.queue = q.queue AND ($2::text IS NULL OR g.team = $2)
     WHERE $2::text IS NOT NULL OR g.team IS NOT NULL
  )`;
}

/**
 * The runs the dispatch policy chooses among, after `served` ($1 queues, $3 limit, $4 priorities, $6 runs
 * read per team and priority, $7 runs left out, $8 the prefetch window in milliseconds, as CLAIM_SQL's):
 * `candidates` (run_id, job, team, queue, priority, available_at, weight, team_rank), each job's runs within
 * its headroom, each concurrency key's within the room the scan found it has (key_room: its job's
 * perKeyConcurrency less its runs leased; a key with none stepped over in the scan) and each capped queue's
 * within its room (queue_room: its cap less its runs leased here; a full queue not scanned), paused jobs,
 * left-out runs and runs of an ordering key but its head (ready_runs_of, migrations/0042) stepped over;
 * CLAIM_SQL and CLAIM_CANDIDATES_SQL share it.
 */
export const CANDIDATES_CTES = `queue_room AS MATERIALIZED (
    SELECT q.queue,
           least(c.concurrency - (SELECT count(*) FROM run_leases l WHERE l.queue = q.queue)::integer,
                 floor(rate_tokens('queue:' || q.queue, r.per_second, r.burst))::integer) AS room
      FROM unnest($1::text[]) AS q(queue)
      LEFT JOIN queue_limits c ON c.queue = q.queue
      LEFT JOIN queue_rates r ON r.queue = q.queue
     WHERE c.queue IS NOT NULL OR r.queue IS NOT NULL
  ), team_room AS MATERIALIZED (
    SELECT r.team, floor(rate_tokens('team:' || r.team, r.per_second, r.burst))::integer AS room
      FROM team_rates r WHERE r.team IN (SELECT s.team FROM served s)
  ), limited_leased AS MATERIALIZED (
    SELECT l.job, j.run_limit - l.leased AS headroom FROM leased_runs_by_job($1::text[]) l JOIN jobs j ON j.name = l.job
     WHERE j.run_limit IS NOT NULL
  ), rated AS MATERIALIZED (
    -- Named in the scan's list of jobs to step over in the default collation, as the others are: a
    -- PL/pgSQL function's text parameters all take the collation of its call's arguments, and in "C" its
    -- comparisons with the queue and team could not use ready_runs_claim_idx.
    SELECT j.name AS job, floor(rate_tokens('job:' || j.name, j.rate_per_second, j.rate_burst))::integer AS tokens
      FROM jobs j WHERE (j.definition->>'queue') = ANY ($1::text[]) AND j.rate_per_second IS NOT NULL
  ), scanned AS MATERIALIZED (
    SELECT r.run_id, r.job, r.team, r.priority, r.available_at, r.concurrency_key, r.key_room, s.queue, s.weight,
           count(*) OVER (PARTITION BY s.queue, s.team, p.priority) AS group_rows
      FROM served s
     CROSS JOIN unnest($4::text[]) AS p(priority)
     CROSS JOIN LATERAL ready_runs_of(s.queue, s.team, p.priority, now() + $8 * interval '1 millisecond', $7::text[],
                                      ARRAY(SELECT x.job FROM limited_leased x WHERE x.headroom <= 0)
                                        || ARRAY(SELECT x.job COLLATE "default" FROM rated x WHERE x.tokens <= 0), $6) r
     WHERE NOT EXISTS (SELECT 1 FROM queue_room x WHERE x.queue = s.queue AND x.room <= 0)
       AND NOT EXISTS (SELECT 1 FROM team_room x WHERE x.team = s.team AND x.room <= 0)
  ), headroom AS (
    SELECT j.name AS job, least(coalesce(x.headroom, j.run_limit), t.tokens) AS headroom
      FROM jobs j LEFT JOIN limited_leased x ON x.job = j.name LEFT JOIN rated t ON t.job = j.name
     WHERE j.name IN (SELECT job FROM scanned) AND (j.run_limit IS NOT NULL OR t.job IS NOT NULL)
  ), candidates AS MATERIALIZED (
    SELECT c.*, row_number() OVER (PARTITION BY c.priority, c.team ORDER BY c.available_at) AS team_rank
      FROM (
        SELECT s.run_id, s.job, s.team, s.queue, s.priority, s.available_at, s.weight,
               row_number() OVER (PARTITION BY s.job ORDER BY s.available_at) AS job_rank, h.headroom,
               row_number() OVER (PARTITION BY s.job, s.concurrency_key ORDER BY s.available_at) AS key_rank, s.key_room,
               row_number() OVER (PARTITION BY s.queue ORDER BY s.available_at) AS queue_rank, q.room AS queue_room,
               row_number() OVER (PARTITION BY s.team ORDER BY s.available_at) AS team_rate_rank, t.room AS team_room
          FROM scanned s LEFT JOIN headroom h USING (job) LEFT JOIN queue_room q USING (queue)
          LEFT JOIN team_room t ON t.team = s.team
      ) c
     WHERE (c.headroom IS NULL OR c.job_rank <= c.headroom) AND (c.key_room IS NULL OR c.key_rank <= c.key_room)
       AND (c.queue_room IS NULL OR c.queue_rank <= c.queue_room)
       AND (c.team_room IS NULL OR c.team_rate_rank <= c.team_room)
  )`;

/**
 * Whether the candidates leave ready runs out: a job's runs past its headroom, or a group read up to $6
 * when $6 is below the batch ($3). The lease then takes another claim to fill the batch.
 */
export const CAPPED_SQL = `(SELECT count(*) FROM scanned) > (SELECT count(*) FROM candidates)
           OR ($6 < $3 AND EXISTS (SELECT 1 FROM scanned WHERE group_rows = $6))`;

/**
 * The claim statement ($1 queues, $2 team or null, $3 limit, $4 priorities, $5 their weights, $6 runs
 * read per team and priority, $7 runs left out: reserved, see lockReadyRuns, $8 milliseconds ahead of
 * their due time runs may be leased: the worker's prefetchMs, 0 for ready runs only), as lockReadyRuns
 * runs it.
 */
export const CLAIM_SQL = `WITH ${servedCte('queue_grants g')}, ${CANDIDATES_CTES}, team_phases AS MATERIALIZED (
    SELECT t.priority, t.team, random() AS u FROM (SELECT DISTINCT priority, team FROM candidates) t
  ), priority_phases AS MATERIALIZED (
    SELECT w.priority, w.weight, random() AS u FROM unnest($4::text[], $5::float8[]) AS w(priority, weight)
  ), within_priority AS (
    SELECT c.run_id, c.priority,
           row_number() OVER (PARTITION BY c.priority ORDER BY (c.team_rank - t.u) / c.weight, c.available_at) AS priority_rank
      FROM candidates c JOIN team_phases t USING (priority, team)
  ), chosen AS MATERIALIZED (
    SELECT w.run_id FROM within_priority w JOIN priority_phases p USING (priority)
     ORDER BY (w.priority_rank - p.u) / p.weight
     LIMIT $3 * 2
  )
  SELECT c.run_id,
         ${CAPPED_SQL} AS capped
    FROM chosen c
   WHERE pg_try_advisory_xact_lock(run_lock_key(c.run_id))
   LIMIT $3`;

/**
 * Steps 1 and 2 of the claim (docs/architecture.md, "Claims and fencing tokens"), in one statement:
 * pick up to `limit` ready runs by the dispatch policy, take each run
 * stream's advisory lock, the very lock es_append takes, and read the locked
 * runs as they are under the locks (CLAIM_AND_READ_SQL). A try-lock instead of FOR
 * UPDATE: concurrent dispatchers skip each other's candidates, and no row
 * lock gives the transaction an id before its append (the event store's
 * ordering rule).
 *
 * The policy is stride scheduling at two levels, each with a random phase
 * per claim so that small batches keep the shares on average:
 *  - teams within a priority: the k-th oldest ready run of a team has the
 *    key (k - u_team) / weight_team. Round-robin across the teams with ready
 *    work (weighted by their grants), oldest first within a team: a team's
 *    1,000,000 runs do not delay another team's 10.
 *  - priorities: the k-th run of a priority in that order has the key
 *    (k - u_priority) / weight_priority, so claims split 70/25/5 while all
 *    three have ready runs, and a priority with none gives its share away.
 * Runs of paused jobs and of jobs at their run limit (jobs.run_limit: its
 * concurrency, or 1 for a schedule whose overlap policy keeps fires apart)
 * are stepped over in the scan (ready_runs_of, migrations/0026: the index
 * range read in order, each run's job checked as it is read, stopping at
 * the limit); a job below its limit gives at most its
 * headroom (limit - leased runs). The leased runs of the limited jobs in
 * the served queues are counted by leased_runs_by_job (migrations/0027,
 * 0029: none counted where no job has a limit; the rows of `run_leases`
 * by its key), so their number bounds that cost. A claim that had to leave some out says
 * so (`capped`), and the lease takes another claim to fill the batch: the
 * job's waiting runs never hide other jobs' runs behind them. The headroom
 * is checked again under the job's lock (withinConcurrencyLimits). Runs with
 * a concurrency key are read with their key's room (ready_runs_of,
 * migrations/0039), those of a full key stepped over, and at most a key's
 * room of its runs taken; checked again under the key's lock the same way.
 *
 * `reserved` runs are stepped over too: with a log of its own, runs whose
 * appends committed but whose rows did not (RunReservations) still look
 * ready until the projector catches up, and proposing them would only have
 * the append refuse them again. A filter on the rows the index range
 * already reads: nothing when the list is empty, as it nearly always is.
 *
 * Cost: per (queue, team, priority) an index range of at most
 * 2 x limit / teams served runs (4 at least, $6): bounded by the claim
 * size, not by the backlog or the number of teams. Known cost:
 * the scan steps over the waiting runs of a job at its limit one by one, so
 * a limited job with a long backlog at the head of its team's runs makes
 * that team's scan longer.
 *
 * The ranges are read from ready_runs (migrations/0026), one table of the
 * waiting runs, not from the runs' partitions by day: npm run bench:claims
 * prints the claim's plan and its buffers at 10,000 and 1,000,000 ready runs.
 */
export async function lockReadyRuns(
  db: Queryable,
  scope: ClaimScope,
  limit: number,
  weights: PriorityWeights,
  reserved: readonly string[],
  prefetchMs = 0,
): Promise<LockedRuns> {
  const { rows } = await db.query<LockedRunRow | NoRunRow>({
    name: 'claim_lock_and_read_ready_runs',
    text: CLAIM_AND_READ_SQL,
    values: [
      scope.queues,
      scope.team,
      limit,
      PRIORITIES,
      PRIORITIES.map((p) => weights[p]),
      perGroupLimit(limit, scope.teamsServed),
      reserved,
      prefetchMs,
    ],
  });
  return lockedRunsOf(rows);
}

/**
 * Steps 1 and 2 of a claim of runs the dispatch policy chose over several servers (chooseRuns,
 * LeaseRunsHandler): their locks tried and the locked runs read (CLAIM_CHOSEN_AND_READ_SQL).
 */
export async function lockChosenRuns(db: Queryable, runIds: readonly string[], prefetchMs = 0): Promise<LockedRuns> {
  const { rows } = await db.query<LockedRunRow | NoRunRow>({
    name: 'claim_lock_and_read_chosen_runs',
    text: CLAIM_CHOSEN_AND_READ_SQL,
    values: [runIds, prefetchMs],
  });
  return lockedRunsOf(rows);
}

/** The runs a claim locked, still ready, read under their locks; `now` the database's clock. */
export interface LockedRuns {
  readonly runs: PresentRun[];
  readonly now: Date;
  /** The jobs with a run limit among the runs' (withinConcurrencyLimits). */
  readonly limitedJobs: Set<string>;
  /** The queues with a cap among the runs' (withinConcurrencyLimits). */
  readonly cappedQueues: Set<string>;
  /** By run id, the rate buckets each run draws from (withinConcurrencyLimits); none for a run without. */
  readonly rateBuckets: Map<string, RateBucket[]>;
  /** Ready runs were left out (CAPPED_SQL): the batch may be short. */
  readonly capped: boolean;
}

type LockedRunRow = RunRow & {
  db_now: Date;
  limited: boolean;
  rate_per_second: number | null;
  rate_burst: number | null;
  key_rate_per_second: number | null;
  key_rate_burst: number | null;
  capped_queues: string[];
  /** Each rated queue's [per second, burst]. */
  queue_rates: Record<string, [number, number]> | null;
  /** Each rated team's [per second, burst]. */
  team_rates: Record<string, [number, number]> | null;
  capped: boolean;
};

/** The one row of a claim's read half when it locked no run that is still ready. */
interface NoRunRow {
  readonly state: null;
  readonly capped: boolean;
}

function lockedRunsOf(rows: ReadonlyArray<LockedRunRow | NoRunRow>): LockedRuns {
  const locked = rows.filter((r): r is LockedRunRow => r.state !== null);
  return {
    runs: locked.map(runFromRow),
    now: locked[0]?.db_now ?? new Date(),
    limitedJobs: new Set(locked.filter((r) => r.limited).map((r) => r.definition.job)),
    cappedQueues: new Set(
      locked.flatMap((r) => (r.capped_queues.includes(r.definition.queue) ? [r.definition.queue] : [])),
    ),
    rateBuckets: new Map(
      locked.flatMap((r) => {
        const buckets = rateBucketsOf(r);
        return buckets.length === 0 ? [] : [[r.definition.runId, buckets] as const];
      }),
    ),
    capped: rows.some((r) => r.capped),
  };
}

/** The rate buckets a locked run draws from: its job's, its concurrency key's, its queue's, its team's (RateBucket). */
function rateBucketsOf(row: LockedRunRow): RateBucket[] {
  const { job, queue, team, concurrencyKey } = row.definition;
  const queueRate = row.queue_rates?.[queue];
  const teamRate = row.team_rates?.[team];
  return [
    ...(row.rate_per_second === null
      ? []
      : [{ name: `job:${job}`, perSecond: row.rate_per_second, burst: row.rate_burst! }]),
    ...(row.key_rate_per_second === null || concurrencyKey === undefined
      ? []
      : [
          {
            name: `key:${limitKey(job, concurrencyKey)}`,
            perSecond: row.key_rate_per_second,
            burst: row.key_rate_burst!,
          },
        ]),
    ...(queueRate === undefined ? [] : [{ name: `queue:${queue}`, perSecond: queueRate[0], burst: queueRate[1] }]),
    ...(teamRate === undefined ? [] : [{ name: `team:${team}`, perSecond: teamRate[0], burst: teamRate[1] }]),
  ];
}

/**
 * The read half of a claim, after a CTE `claimed` (run_id, capped) of the runs whose locks it took:
 * lock_and_read_runs (migrations/0012; the locks are ours already, so it waits for nothing) reads the
 * locked runs in a statement of its own, whose snapshot is taken after the locks were granted: a run
 * that another claim leased and committed in between reads as it now is, and is left out unless still
 * ready (or due within the prefetch window, the parameter `prefetchMs` names). With the database's
 * clock, and whether each run's job has a run limit. Always one row at least, for `capped`. Written
 * out once, at load.
 */
function readClaimedRuns(prefetchMs: '$8' | '$2'): string {
  return `SELECT x.*, c.capped
    FROM (SELECT coalesce(bool_or(claimed.capped), false) AS capped FROM claimed) c
    LEFT JOIN LATERAL (
      SELECT ${LOCKED_RUN_COLUMNS}, now() AS db_now, coalesce(j.limited, false) AS limited,
             j.rate_per_second, j.rate_burst, j.key_rate_per_second, j.key_rate_burst,
             ARRAY(SELECT q.queue FROM queue_limits q) AS capped_queues,
             (SELECT jsonb_object_agg(q.queue, jsonb_build_array(q.per_second, q.burst)) FROM queue_rates q) AS queue_rates,
             (SELECT jsonb_object_agg(t.team, jsonb_build_array(t.per_second, t.burst)) FROM team_rates t) AS team_rates
        FROM lock_and_read_runs(ARRAY(SELECT claimed.run_id FROM claimed)) r
        LEFT JOIN LATERAL (
          SELECT j.run_limit IS NOT NULL AS limited, j.rate_per_second, j.rate_burst, j.key_rate_per_second, j.key_rate_burst
            FROM jobs j WHERE j.name = r.job
        ) j ON true
       WHERE r.state IN (${WAITING_SQL}) AND r.available_at <= now() + ${prefetchMs} * interval '1 millisecond'
    ) x ON true`;
}

/** Steps 1 and 2 of the claim in one round trip: CLAIM_SQL takes the locks, then its read half. */
const CLAIM_AND_READ_SQL = `WITH claimed AS MATERIALIZED (${CLAIM_SQL})
  ${readClaimedRuns('$8')}`;

/**
 * The same for given runs ($1 run ids, $2 the prefetch window in milliseconds): each lock tried, never
 * waited for, as CLAIM_SQL's are; a run another claim holds or took since it was chosen is left out.
 */
const CLAIM_CHOSEN_AND_READ_SQL = `WITH claimed AS MATERIALIZED (
    SELECT u.run_id, false AS capped FROM unnest($1::text[]) AS u(run_id)
     WHERE pg_try_advisory_xact_lock(run_lock_key(u.run_id))
  )
  ${readClaimedRuns('$2')}`;

/** How many teams a platform worker's queues serve (1 for a team's own worker). */
export async function countTeamsServed(db: Queryable, queues: readonly string[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>({
    name: 'claim_count_teams_served',
    text: 'SELECT count(DISTINCT team)::int AS n FROM queue_grants WHERE queue = ANY($1::text[])',
    values: [queues],
  });
  return rows[0]?.n ?? 0;
}

/**
 * Queue caps, per-job and per-key concurrency and order per key, exactly:
 * the capped queues, the jobs with a limit, the concurrency keys and the
 * ordering keys among the locked runs are locked (blocking, in that order,
 * each kind in name order, so two claims cannot deadlock), and only then is
 * each one's room counted, and each ordering key's head found, in a
 * statement that sees every claim and enqueue committed before the locks
 * were granted (lockAndCountLimits: one round trip). Resolves with the runs
 * to lease, in their order while each has room (a run of an ordering key
 * only as its key's head): the others are left for a later claim.
 */
export async function withinConcurrencyLimits(
  db: Queryable,
  runs: readonly PresentRun[],
  { limitedJobs, cappedQueues, rateBuckets }: Pick<LockedRuns, 'limitedJobs' | 'cappedQueues' | 'rateBuckets'>,
): Promise<WithinLimits> {
  const keyed = (key: (run: PresentRun) => string | undefined) => {
    const nameOf = (run: PresentRun): string | undefined => {
      const k = key(run);
      return k === undefined ? undefined : limitKey(run.definition.job, k);
    };
    const all = new Map(
      runs.flatMap((run) => {
        const name = nameOf(run);
        return name === undefined ? [] : [[name, { job: run.definition.job, key: key(run)! }]];
      }),
    );
    return { nameOf, all: [...all.values()] };
  };
  const keys = keyed((run) => run.definition.concurrencyKey);
  const orders = keyed((run) => run.definition.ordering?.key);
  const rates = new Map([...rateBuckets.values()].flat().map((bucket) => [bucket.name, bucket]));
  if (
    cappedQueues.size === 0 &&
    limitedJobs.size === 0 &&
    keys.all.length === 0 &&
    orders.all.length === 0 &&
    rates.size === 0
  )
    return { runs: [...runs], takeTokens: NO_TOKENS };
  const rooms = await lockAndCountLimits(db, {
    queues: [...cappedQueues],
    jobs: [...limitedJobs],
    keys: keys.all,
    orders: orders.all,
    rates: [...rates.values()],
  });
  // A run of an ordering key is leased only as its key's head, and while no run of the key is leased.
  const inOrder = runs.filter((run) => {
    const name = orders.nameOf(run);
    return name === undefined || rooms.heads.get(name) === run.definition.ordering!.seq;
  });
  const bucketsOf = (run: PresentRun): RateBucket[] => rateBuckets.get(run.definition.runId) ?? [];
  const fitting = takeWithinRooms(inOrder, (run) => [
    [rooms.queues, run.definition.queue],
    [rooms.jobs, run.definition.job],
    [rooms.keys, keys.nameOf(run)],
    [rooms.orders, orders.nameOf(run)],
    ...bucketsOf(run).map((bucket) => [rooms.rates, bucket.name] as const),
  ]);
  const throttled = [...rates.keys()].filter((name) => rooms.rates.get(name)! <= 0);
  return {
    runs: fitting,
    throttled,
    takeTokens: async (leased) => {
      const taken = new Map<string, number>();
      for (const run of leased) for (const { name } of bucketsOf(run)) taken.set(name, (taken.get(name) ?? 0) + 1);
      await takeRateTokens(db, taken, rooms.buckets);
    },
  };
}

/** The runs a claim may lease within their limits, and what it still has to write once it has leased them. */
export interface WithinLimits {
  readonly runs: PresentRun[];
  /** The rate buckets (RateBucket.name) that had no whole token left for the claim's runs. */
  readonly throttled?: readonly string[];
  /** After the claim's append: the rate buckets the leased runs drew from, less their tokens (takeRateTokens). */
  readonly takeTokens: (leased: readonly PresentRun[]) => Promise<void>;
}

const NO_TOKENS: WithinLimits['takeTokens'] = async () => undefined;

/**
 * The runs that fit, in order: each takes a place in every room it names (a name a room does not hold, or
 * none, has no limit), and one that finds any of them full is left out, taking none.
 */
export function takeWithinRooms<T>(
  runs: readonly T[],
  roomsOf: (run: T) => ReadonlyArray<readonly [Map<string, number>, string | undefined]>,
): T[] {
  return runs.filter((run) => {
    const limits = roomsOf(run).filter(
      (limit): limit is readonly [Map<string, number>, string] => limit[1] !== undefined && limit[0].has(limit[1]),
    );
    if (limits.some(([rooms, name]) => rooms.get(name)! <= 0)) return false;
    for (const [rooms, name] of limits) rooms.set(name, rooms.get(name)! - 1);
    return true;
  });
}

/** When the next run of these queues becomes ready: the long-poll's timer. */
export async function nextAvailableAt(
  db: Queryable,
  queues: readonly string[],
  team: string | null,
): Promise<Date | null> {
  const { rows } = await db.query<{ next: Date | null }>({
    name: 'claim_next_available_at',
    text: `SELECT min(n.available_at) AS next
             FROM unnest($1::text[]) AS q(queue)
             LEFT JOIN queue_grants g ON g.queue = q.queue AND ($2::text IS NULL OR g.team = $2)
            CROSS JOIN unnest($3::text[]) AS p(priority)
            CROSS JOIN LATERAL (
              SELECT r.available_at FROM ready_runs r
               WHERE r.queue = q.queue AND r.team = coalesce($2, g.team) AND r.priority = p.priority
               ORDER BY r.available_at LIMIT 1
            ) n`,
    values: [queues, team, PRIORITIES],
  });
  return rows[0]?.next ?? null;
}

/**
 * When the next token of an empty rate bucket of these queues comes (their jobs' and their own rates:
 * next_rate_token_at, migrations/0044); null when none is empty. A lease call whose ready runs are held
 * back waits until then rather than looking again sooner.
 */
export async function nextRateTokenAt(db: Queryable, queues: readonly string[]): Promise<Date | null> {
  const { rows } = await db.query<{ next: Date | null }>({
    name: 'claim_next_rate_token_at',
    text: 'SELECT next_rate_token_at($1::text[]) AS next',
    values: [queues],
  });
  return rows[0]?.next ?? null;
}
