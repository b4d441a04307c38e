import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import {
  actorOf,
  assertNoSecrets,
  debouncedAt,
  DomainError,
  RUN_EVENT_SCHEMA_VERSION,
  type DefinedJob,
  type PresentRun,
  type RunScheduledData,
  runUnique,
  type TeamCaller,
  type TraceContext,
} from '@chronicle/domain';
import {
  type Clock,
  CLOCK,
  currentRequestContext,
  PG_POOL,
  type Queryable,
  withTransaction,
} from '@chronicle/platform';
import { findJobRunLimits } from '@chronicle/projections';
import { PAYLOAD_STORE, storeLargePayloads, type PayloadStore } from '../payloads/payload-store';
import { admitEnqueue } from '../quotas/admit-enqueue';
import { countPendingRuns, teamJobNames } from '../quotas/team-quotas.sql';
import { retryOnConflict } from '../unit-of-work/retry-on-conflict';
import type { ScheduleRuns } from '../unit-of-work/run-decisions';
import { type RunServer, RunServers } from '../shards/run-servers';
import { ReadySignal } from '../workers/ready-signal';
import { keepDebouncedRuns } from './debounced-runs.sql';
import { lockJobLimits } from './job-limits.sql';
import { placeInKeyOrder } from './ordered-runs.sql';
import { keepUniqueRuns } from './unique-runs.sql';
import {
  derivedRunId,
  derivedRunIdBefore,
  findDerivedRuns,
  madeRunId,
  newRunScheduled,
  type DerivedRunId,
} from './new-run';

export interface EnqueueRequest {
  readonly payload?: unknown;
  readonly dueAt: Date;
  readonly idempotencyKey?: string;
  /** reject: refuse (409 concurrency-limit) while the job has its limit of runs leased. */
  readonly ifRunning?: 'queue' | 'reject';
  /** The run's unique key (docs/api.md, "Unique runs"): a run of the job that holds it answers instead. */
  readonly uniqueKey?: string;
  /** reject: refuse (409 duplicate-run) when a run holds the unique key; existing (default): answer with it. */
  readonly ifDuplicate?: 'existing' | 'reject';
  /** The run's concurrency key: leased only while its job has fewer than perKeyConcurrency runs of it leased. */
  readonly concurrencyKey?: string;
  /**
   * The run's ordering key: the job's runs with this key are leased one at a time, in the order they
   * were enqueued (placeInKeyOrder gives the run its place).
   */
  readonly orderingKey?: string;
  /**
   * The run's debounce key (docs/api.md, "Debounced runs"), for a job with a `debounce` alone: due the job's
   * debounce seconds after the enqueue (or a later dueAt); while a run of the job with the key waits unleased, that run is moved
   * there and takes this payload instead (RunDebounced), and is the answer.
   */
  readonly debounceKey?: string;
  /**
   * A scheduled fire time's run (backfill): its id from (job, nominal time), as the materialiser makes it,
   * and the id it had before run ids named their slot.
   */
  readonly scheduled?: { readonly runId: string; readonly runIdBefore: string; readonly source: 'backfill' };
}

export interface EnqueuedRun {
  readonly run: PresentRun;
  /**
   * false: the run existed (a repeated Idempotency-Key, a fire time backfilled twice, a unique key held, a
   * waiting run of the debounce key moved).
   */
  readonly created: boolean;
}

/**
 * New runs of the caller's jobs, one or many, in one unit of work: each
 * decided by the run decider, one multi-stream append (each stream expected
 * not to exist) and one row upsert. A run id derived from (job, Idempotency-Key) makes a repeated
 * request find its run there: it comes back as it is, created false, and
 * costs no quota. Over a quota of the team: 429 and nothing is enqueued.
 */
export class EnqueueRuns extends Command<EnqueuedRun[]> {
  constructor(
    readonly caller: TeamCaller,
    readonly items: ReadonlyArray<{ readonly job: DefinedJob; readonly request: EnqueueRequest }>,
    readonly source: 'api' | 'batch',
  ) {
    super();
  }
}

@CommandHandler(EnqueueRuns)
export class EnqueueRunsHandler implements ICommandHandler<EnqueueRuns> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly ready: ReadySignal,
    private readonly servers: RunServers,
    @Inject(PAYLOAD_STORE) private readonly payloads: PayloadStore,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ caller, items, source }: EnqueueRuns): Promise<EnqueuedRun[]> {
    // A run's own payload (the job's default was checked when it was defined), under the job's allow-list.
    items.forEach(({ job, request }, i) =>
      assertNoSecrets(
        request.payload,
        job.definition.secretsAllowed,
        items.length > 1 ? `runs[${i}].payload` : 'payload',
      ),
    );
    refuseDebounceKeys(items);
    const rejectIfBusy = [
      ...new Set(items.filter((i) => i.request.ifRunning === 'reject').map((i) => i.job.definition.name)),
    ];
    const metadata = { actor: actorOf(caller), schemaVersion: RUN_EVENT_SCHEMA_VERSION };
    const rejectDuplicates = new Set<string>();
    const enqueued = await retryOnConflict(async () => {
      const now = this.clock.now();
      // The enqueue's trace, for the worker's attempts to link to (a backfill's runs too, made by a request).
      const trace = currentRequestContext()?.trace;
      const scheduled = items.map(({ job, request }) => scheduledRun(job, request, source, now, trace));
      scheduled.forEach((run, i) => {
        if (items[i]!.request.ifDuplicate === 'reject') rejectDuplicates.add(run.runId);
      });
      const madeIds = new Set(scheduled.filter((_, i) => !derivesRunId(items[i]!.request)).map((s) => s.runId));
      const orderingKeys = new Map(
        scheduled.flatMap((run, i) => {
          const key = items[i]!.request.orderingKey;
          return key === undefined ? [] : [[run.runId, key] as const];
        }),
      );
      // Each server's part: the runs of the jobs whose shards it holds (one part without a shard map).
      const parts = this.servers.split(
        items.map((item, i) => ({ ...item, run: scheduled[i]! })),
        ({ job }) => this.servers.ofJob(job.definition.name),
      );
      // A run id made for this request names no run yet: only those derived from it are looked up.
      const existing = new Map<string, PresentRun>();
      for (const [server, part] of parts) {
        const derived = part.flatMap(({ job, request, run }) => derivedId(job, request, run.runId));
        for (const [runId, run] of await findDerivedRuns(server.pool, derived)) existing.set(runId, run);
      }
      const fresh = new Map<string, RunScheduledData>();
      for (const run of scheduled) if (!existing.has(run.runId)) fresh.set(run.runId, run);
      // Outside the unit of work: durable before the append names them, whichever store holds the log.
      const lean = new Map(
        (await storeLargePayloads(this.payloads, [...fresh.values()])).map((run) => [run.runId, run]),
      );
      const appends = parts.flatMap(([server, part]): PartAppend[] => {
        const runs = [...new Set(part.map(({ run }) => run.runId))].flatMap((id) => lean.get(id) ?? []);
        const busy = rejectIfBusy.filter((job) => part.some((p) => p.job.definition.name === job));
        return runs.length === 0 && busy.length === 0 ? [] : [{ server, runs, busy }];
      });
      const { created, held, moved } =
        appends.length === 0
          ? { created: [], held: new Map<string, HeldKey>(), moved: new Map<string, PresentRun>() }
          : await this.append(
              caller.team,
              appends,
              fresh.size,
              { metadata, madeIds },
              { now, rejectDuplicates, orderingKeys },
            );
      const createdById = new Map(created.map((run) => [run.definition.runId, run]));
      const answered = new Set<string>();
      return scheduled.map(({ runId }) => {
        const holder = held.get(runId);
        const run =
          createdById.get(runId) ??
          existing.get(runId) ??
          holder?.run ??
          createdById.get(holder?.holder ?? '') ??
          moved.get(runId);
        if (run === undefined || run.definition.team !== caller.team)
          throw new DomainError('not-found', `run ${runId} not found`);
        const first = createdById.has(runId) && !answered.has(runId);
        answered.add(runId);
        return { run, created: first };
      });
    });
    if (enqueued.some((r) => r.created)) this.ready.notify();
    return enqueued;
  }

  /**
   * Each server's new runs in a unit of work there, under the team's quotas (admitEnqueue, for all of
   * them at once). Runs all in the control database: the quota check in the same transaction as the
   * append, as ever. Runs on other servers: the check in a transaction of the control database (where
   * the quotas are) held across their units of work, one server after the other; a failure part way
   * leaves the servers before it written, and a retry with the same Idempotency-Keys finds their runs.
   */
  private async append(
    team: string,
    appends: readonly PartAppend[],
    cost: number,
    schedule: Omit<ScheduleRuns, 'runs'>,
    keys: {
      readonly now: Date;
      readonly rejectDuplicates: ReadonlySet<string>;
      readonly orderingKeys: ReadonlyMap<string, string>;
    },
  ): Promise<{ created: PresentRun[]; held: Map<string, HeldKey>; moved: Map<string, PresentRun> }> {
    // The team's pending runs on the other servers, counted under the quota lock (held until commit).
    const pendingElsewhere = async (limit: number): Promise<number> => {
      const others = this.servers.all.filter((s) => !s.isControl);
      if (limit === 0 || others.length === 0) return 0;
      const jobs = await teamJobNames(this.pool, team);
      const counts = await Promise.all(others.map((s) => countPendingRuns(s.pool, team, jobs, limit)));
      return counts.reduce((a, b) => a + b, 0);
    };
    const held = new Map<string, HeldKey>();
    const moved = new Map<string, PresentRun>(); // by the id the enqueue's run would have had: the run it moved
    const onServer = ({ server, runs, busy }: PartAppend, quotas: 'here' | 'checked'): Promise<PresentRun[]> =>
      server.decisions.unitOfWork(async (work) => {
        // Locks and reads only before the append: es_append must come before the transaction's first write.
        // A moved run's stream is locked before the limit locks (the jobs', then the ordering keys'), in the
        // order a claim takes them: a claim that holds a run's lock may wait for a limit's, never the reverse.
        const kept = await keepUniqueRuns(work.tx, runs, keys.now);
        refuseDuplicates(kept.held, keys.rejectDuplicates);
        const debounced = await keepDebouncedRuns(work.tx, kept.make, keys.now);
        await refuseBusyJobs(work.tx, busy);
        const made = cost - kept.held.size - debounced.moved.size;
        const takeTokens = quotas === 'here' ? await admitEnqueue(work.tx, team, made, pendingElsewhere) : undefined;
        const make = await placeInKeyOrder(work.tx, debounced.make, (run) => keys.orderingKeys.get(run.runId));
        const { created, decided } =
          make.length === 0 && debounced.runs.length === 0
            ? { created: [], decided: [] }
            : await work.scheduleWith({
                ...schedule,
                runs: make,
                ...(debounced.runs.length === 0
                  ? {}
                  : { also: { runs: debounced.runs, decideOne: debounced.decideOne, metadata: schedule.metadata } }),
              });
        await takeTokens?.();
        for (const [runId, key] of kept.held) held.set(runId, key);
        const after = new Map(decided.map((d) => [d.after.definition.runId, d.after]));
        for (const [runId, run] of debounced.moved) moved.set(runId, after.get(run.definition.runId) ?? run);
        return created;
      });
    if (appends.length === 1 && appends[0]!.server.isControl)
      return { created: await onServer(appends[0]!, 'here'), held, moved };
    return withTransaction(this.pool, async (control) => {
      const takeTokens = await admitEnqueue(control, team, cost, pendingElsewhere);
      const created: PresentRun[] = [];
      for (const part of appends) created.push(...(await onServer(part, 'checked')));
      await takeTokens();
      return { created, held, moved };
    });
  }
}

/**
 * ifDuplicate: reject refuses a run whose unique key a run holds, the whole request with it (as
 * ifRunning: reject does), naming the run that holds it.
 */
function refuseDuplicates(held: ReadonlyMap<string, HeldKey>, rejecting: ReadonlySet<string>): void {
  for (const [runId, { holder }] of held)
    if (rejecting.has(runId))
      throw new DomainError('duplicate-run', `run ${holder} holds the unique key; enqueued with ifDuplicate: reject`, {
        runId: holder,
      });
}

/**
 * A debounce key is for a job with a `debounce` alone, and once per batch: the key's waiting run takes one
 * enqueue's payload and time per unit of work (two of one batch would be the batch racing itself).
 */
function refuseDebounceKeys(items: EnqueueRuns['items']): void {
  const field = (i: number): string => (items.length > 1 ? `runs[${i}].debounceKey` : 'debounceKey');
  const seen = new Set<string>();
  items.forEach(({ job, request }, i) => {
    if (request.debounceKey === undefined) return;
    if (job.definition.debounce === undefined)
      throw new DomainError('validation-error', `${field(i)}: job ${job.definition.name} has no debounce`, {
        field: field(i),
      });
    const key = `${job.definition.name}\u0000${request.debounceKey}`;
    if (seen.has(key))
      throw new DomainError('validation-error', `${field(i)}: named by an earlier run of the batch for the same job`, {
        field: field(i),
      });
    seen.add(key);
  });
}

/** A new run not made: the run that holds its unique key (read, or made earlier in the same request). */
type HeldKey = { readonly holder: string; readonly run?: PresentRun };

/** A server's part of an enqueue: its new runs, and the jobs there refused while busy (ifRunning: reject). */
interface PartAppend {
  readonly server: RunServer;
  readonly runs: readonly RunScheduledData[];
  readonly busy: readonly string[];
}

/**
 * ifRunning: reject refuses a run that would have to wait: its job has as
 * many runs leased or ready as its limit allows. Decided under the job's
 * limit lock, which claims take too, so two enqueues (or an enqueue and a
 * claim) cannot both pass it.
 */
async function refuseBusyJobs(tx: Queryable, jobs: readonly string[]): Promise<void> {
  if (jobs.length === 0) return;
  await lockJobLimits(tx, jobs);
  const full = (await findJobRunLimits(tx, jobs)).find((limit) => limit.leased + limit.ready >= limit.run_limit);
  if (full !== undefined)
    throw new DomainError(
      'concurrency-limit',
      `job ${full.job} has ${full.leased} of its ${full.run_limit} runs leased and ${full.ready} ready; enqueued with ifRunning: reject`,
    );
}

/** A run id from (job, Idempotency-Key) or a fire time may name a run that exists; one made for the request may not. */
function derivesRunId(request: EnqueueRequest): boolean {
  return request.scheduled !== undefined || request.idempotencyKey !== undefined;
}

/** A derived run id with its earlier form, to look both up; none for an id made for the request. */
function derivedId(job: DefinedJob, request: EnqueueRequest, runId: string): DerivedRunId[] {
  if (request.scheduled !== undefined) return [{ runId, before: request.scheduled.runIdBefore }];
  if (request.idempotencyKey === undefined) return [];
  return [{ runId, before: derivedRunIdBefore(job.definition.name, request.idempotencyKey) }];
}

/** The RunScheduled of a job's new run; its id derives from (job, Idempotency-Key) when a key is given. */
function scheduledRun(
  job: DefinedJob,
  request: EnqueueRequest,
  source: RunScheduledData['source'],
  now: Date,
  trace: TraceContext | undefined,
): RunScheduledData {
  const runId =
    request.scheduled?.runId ??
    (request.idempotencyKey === undefined
      ? madeRunId(job.definition.name)
      : derivedRunId(job.definition.name, request.idempotencyKey));
  const { debounce } = job.definition;
  // A debounced run counts from its enqueue's time, decided under its key's lock (so each enqueue of the key
  // moves its run later than the one before), or from a later runAt.
  const dueAt =
    request.debounceKey === undefined || debounce === undefined
      ? request.dueAt
      : debouncedAt(debounce, request.dueAt > now ? request.dueAt : now);
  return newRunScheduled(job.definition, job.version, {
    runId,
    dueAt,
    payload: request.payload,
    idempotencyKey: request.idempotencyKey ?? runId,
    source: request.scheduled?.source ?? source,
    ...(request.uniqueKey === undefined ? {} : { unique: runUnique(request.uniqueKey, job.definition.unique, now) }),
    ...(request.concurrencyKey === undefined ? {} : { concurrencyKey: request.concurrencyKey }),
    ...(request.debounceKey === undefined ? {} : { debounceKey: request.debounceKey }),
    ...(trace === undefined ? {} : { trace }),
  });
}
