import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import {
  actorOf,
  ABSENT,
  DomainError,
  evolve,
  RUN_EVENT_SCHEMA_VERSION,
  runStreamId,
  type DefinedJob,
  type PresentRun,
  type RunScheduledData,
  type TeamCaller,
} from '@chronicle/domain';
import { uuidV7, type EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { findJobRunLimits, findRunSnapshots, upsertRuns } from '@chronicle/projections';
import { admitEnqueue } from '../quotas/admit-enqueue';
import { retryOnConflict } from '../unit-of-work/retry-on-conflict';
import { ReadySignal } from '../workers/ready-signal';
import { derivedRunId, newRunScheduled } from './new-run';

export interface EnqueueRequest {
  readonly payload?: unknown;
  readonly dueAt: Date;
  readonly idempotencyKey?: string;
  /** reject: refuse (409 concurrency-limit) while the job has its limit of runs leased. */
  readonly ifRunning?: 'queue' | 'reject';
  /** A scheduled fire time's run (backfill): its id from (job, nominal time), as the materialiser makes it. */
  readonly scheduled?: { readonly runId: string; readonly source: 'backfill' };
}

export interface EnqueuedRun {
  readonly run: PresentRun;
  /** false: the run existed (a repeated Idempotency-Key, a fire time backfilled twice). */
  readonly created: boolean;
}

/**
 * New runs of the caller's jobs, one or many, in one transaction: one
 * multi-stream append (each stream expected not to exist) and one row
 * upsert. A run id derived from (job, Idempotency-Key) makes a repeated
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
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly ready: ReadySignal,
  ) {}

  async execute({ caller, items, source }: EnqueueRuns): Promise<EnqueuedRun[]> {
    const rejectIfRunning = [
      ...new Set(items.filter((i) => i.request.ifRunning === 'reject').map((i) => i.job.definition.name)),
    ];
    const full = (await findJobRunLimits(this.pool, rejectIfRunning)).find((limit) => limit.leased >= limit.run_limit);
    if (full !== undefined)
      throw new DomainError(
        'concurrency-limit',
        `job ${full.job} has ${full.leased} of its ${full.run_limit} runs leased; enqueued with ifRunning: reject`,
      );
    const enqueued = await retryOnConflict(async () => {
      const scheduled = items.map(({ job, request }) => scheduledRun(job, request, source));
      const existing = new Map(
        (
          await findRunSnapshots(
            this.pool,
            scheduled.map((s) => s.runId),
          )
        ).map((r) => [r.definition.runId, r]),
      );
      const fresh = new Map<string, PresentRun>();
      for (const run of scheduled) {
        if (existing.has(run.runId) || fresh.has(run.runId)) continue;
        fresh.set(run.runId, evolve(ABSENT, { type: 'RunScheduled', data: run }) as PresentRun);
      }
      await this.appendNewRuns(caller, [...fresh.values()]);
      const created = new Set<string>();
      return scheduled.map(({ runId }) => {
        const run = fresh.get(runId) ?? existing.get(runId);
        if (run === undefined || run.definition.team !== caller.team)
          throw new DomainError('not-found', `run ${runId} not found`);
        const first = fresh.has(runId) && !created.has(runId);
        created.add(runId);
        return { run, created: first };
      });
    });
    if (enqueued.some((r) => r.created)) this.ready.notify();
    return enqueued;
  }

  private async appendNewRuns(caller: TeamCaller, runs: readonly PresentRun[]): Promise<void> {
    if (runs.length === 0) return;
    const metadata = { actor: actorOf(caller), schemaVersion: RUN_EVENT_SCHEMA_VERSION };
    const appends = runs.map((run) => ({
      streamId: runStreamId(run.definition.runId),
      expected: 'no_stream' as const,
      events: [{ type: 'RunScheduled', data: run.definition, metadata }],
    }));
    await this.eventStore.unitOfWork(this.pool, async ({ tx, append }) => {
      // The quota check locks and reads only: es_append must come before the transaction's first write.
      const takeTokens = await admitEnqueue(tx, caller.team, runs.length);
      await append(appends);
      await upsertRuns(tx, runs);
      await takeTokens();
    });
  }
}

/** The RunScheduled of a job's new run; its id derives from (job, Idempotency-Key) when a key is given. */
function scheduledRun(job: DefinedJob, request: EnqueueRequest, source: RunScheduledData['source']): RunScheduledData {
  const runId =
    request.scheduled?.runId ??
    (request.idempotencyKey === undefined
      ? `run_${uuidV7().replace(/-/g, '')}`
      : derivedRunId(job.definition.name, request.idempotencyKey));
  return newRunScheduled(job.definition, {
    runId,
    dueAt: request.dueAt,
    payload: request.payload,
    idempotencyKey: request.idempotencyKey ?? runId,
    source: request.scheduled?.source ?? source,
  });
}
