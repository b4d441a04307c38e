import { Inject, Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DomainError } from '../../../../libs/domain/src/domain-error';
import { decide, type RunCommand } from '../../../../libs/domain/src/run/run-decider';
import { RUN_EVENT_SCHEMA_VERSION, type RunEvent, type RunScheduledData } from '../../../../libs/domain/src/run/run-events';
import { ABSENT, evolve, foldRun, type RunSnapshot } from '../../../../libs/domain/src/run/run-state';
import { runStreamId } from '../../../../libs/domain/src/streams';
import { uuidV7 } from '../../../../libs/event-store/src/append-validation';
import { WrongExpectedRevisionError } from '../../../../libs/event-store/src/event-store.errors';
import type { EventStore, RecordedEvent } from '../../../../libs/event-store/src/event-store.port';
import { PostgresEventStore } from '../../../../libs/event-store/src/postgres/postgres.event-store';
import { withTransaction } from '../../../../libs/platform/src/database/pg-pool';
import type { Clock } from '../../../../libs/platform/src/clock/clock';
import { CLOCK, EVENT_STORE, PG_POOL } from '../../../../libs/platform/src/runtime/tokens';
import type { Caller, TeamCaller } from '../auth/caller';
import type { DefinedJob } from '../jobs/jobs.service';
import { derivedRunId, newRunScheduled } from '../../../../libs/application/src/new-run';
import { executeStreamCommand } from '../../../../libs/application/src/stream-command';
import { findJobRunLimits, findRunSnapshots, upsertRun, upsertRuns } from '../../../../projections/runs.sql';
import { admitEnqueue } from '../quotas/enqueue-quota';

export type PresentRun = Exclude<RunSnapshot, { status: 'absent' }>;

export interface EnqueueRequest {
  readonly payload?: unknown;
  readonly dueAt: Date;
  readonly idempotencyKey?: string;
  /** reject: refuse (409 concurrency-limit) while the job has its limit of runs leased. */
  readonly ifRunning?: 'queue' | 'reject';
  /** A scheduled fire time's run (backfill): its id from (job, nominal time), as the materialiser makes it. */
  readonly scheduled?: { readonly runId: string; readonly source: 'backfill' };
}

/** Runs: every transition an event on `run-<id>`, decided by the pure run decider. */
@Injectable()
export class RunsService {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /**
   * A run id derived from (job, Idempotency-Key) makes a repeated request find
   * the run there: the same run comes back, created false. One run is a batch
   * of one, so the team's quotas are checked in the same transaction.
   */
  async enqueue(caller: TeamCaller, job: DefinedJob, request: EnqueueRequest): Promise<{ run: PresentRun; created: boolean }> {
    const [result] = await this.enqueueRuns(caller, [{ job, request }], 'api');
    return result!;
  }

  /**
   * Many runs in one transaction: one multi-stream append (each stream
   * expected not to exist) and one row upsert. Runs whose id exists already
   * (a repeated Idempotency-Key) come back as they are, created false, and
   * cost no quota. Over a quota of the team: 429 and nothing is enqueued.
   */
  async enqueueBatch(caller: TeamCaller, items: ReadonlyArray<{ job: DefinedJob; request: EnqueueRequest }>): Promise<Array<{ run: PresentRun; created: boolean }>> {
    return this.enqueueRuns(caller, items, 'batch');
  }

  private async enqueueRuns(caller: TeamCaller, items: ReadonlyArray<{ job: DefinedJob; request: EnqueueRequest }>, source: RunScheduledData['source']): Promise<Array<{ run: PresentRun; created: boolean }>> {
    const rejectIfRunning = [...new Set(items.filter((i) => i.request.ifRunning === 'reject').map((i) => i.job.definition.name))];
    const full = (await findJobRunLimits(this.pool, rejectIfRunning)).find((limit) => limit.leased >= limit.run_limit);
    if (full !== undefined) throw new DomainError('concurrency-limit', `job ${full.job} has ${full.leased} of its ${full.run_limit} runs leased; enqueued with ifRunning: reject`);
    for (let attempt = 1; ; attempt++) {
      const scheduled = items.map(({ job, request }) => scheduledRun(job, request, source));
      const existing = new Map((await findRunSnapshots(this.pool, scheduled.map((s) => s.runId))).map((r) => [r.definition.runId, r]));
      const fresh = new Map<string, PresentRun>();
      for (const run of scheduled) {
        if (existing.has(run.runId) || fresh.has(run.runId)) continue;
        fresh.set(run.runId, evolve(ABSENT, { type: 'RunScheduled', data: run }) as PresentRun);
      }
      try {
        await this.appendNewRuns(caller, [...fresh.values()]);
      } catch (err) {
        if (err instanceof WrongExpectedRevisionError && attempt < 4) continue;
        throw err;
      }
      const created = new Set<string>();
      return scheduled.map(({ runId }) => {
        const run = fresh.get(runId) ?? existing.get(runId);
        if (run === undefined || run.definition.team !== caller.team) throw new DomainError('not-found', `run ${runId} not found`);
        const first = fresh.has(runId) && !created.has(runId);
        created.add(runId);
        return { run, created: first };
      });
    }
  }

  private async appendNewRuns(caller: TeamCaller, runs: readonly PresentRun[]): Promise<void> {
    if (runs.length === 0) return;
    const metadata = { actor: actorOf(caller), schemaVersion: RUN_EVENT_SCHEMA_VERSION };
    const appends = runs.map((run) => ({ streamId: runStreamId(run.definition.runId), expected: 'no_stream' as const, events: [{ type: 'RunScheduled', data: run.definition, metadata }] }));
    const store = this.eventStore;
    await withTransaction(this.pool, async (tx) => {
      // The quota check locks and reads only: es_append must come before the transaction's first write.
      const takeTokens = await admitEnqueue(tx, caller.team, runs.length);
      if (store instanceof PostgresEventStore) await store.appendWith(tx, appends);
      else await store.appendToStreams(appends);
      await upsertRuns(tx, runs);
      await takeTokens();
    });
  }

  /** Apply a command to a run the caller may act on; 404 for runs of other teams or queues. */
  async command(caller: Caller, runId: string, command: (now: Date) => RunCommand): Promise<PresentRun> {
    // Authorised on the state the command decides from: one read of the stream.
    const { state } = await this.execute(actorOf(caller), runId, (current) => decide(command(this.clock.now()), this.authorize(caller, current, runId)));
    return present(state);
  }

  async load(caller: Caller, runId: string): Promise<PresentRun> {
    return this.authorize(caller, foldRun(await this.history(runId)), runId);
  }

  async events(caller: Caller, runId: string): Promise<readonly RecordedEvent[]> {
    const recorded = await this.eventStore.readStream(runStreamId(runId));
    this.authorize(caller, foldRun(recorded.map((e) => ({ type: e.type, data: e.data }) as RunEvent)), runId);
    return recorded;
  }

  private authorize(caller: Caller, state: RunSnapshot, runId: string): PresentRun {
    const visible =
      state.status !== 'absent' &&
      (caller.kind === 'admin' ||
        (caller.kind === 'team' && state.definition.team === caller.team) ||
        (caller.kind === 'worker' && (caller.team === null || state.definition.team === caller.team) && caller.queues.includes(state.definition.queue)));
    if (!visible) throw new DomainError('not-found', `run ${runId} not found`);
    return state as PresentRun;
  }

  private async history(runId: string): Promise<RunEvent[]> {
    return (await this.eventStore.readStream(runStreamId(runId))).map((e) => ({ type: e.type, data: e.data }) as RunEvent);
  }

  private execute(actor: string, runId: string, decideEvents: (state: RunSnapshot) => RunEvent[]): ReturnType<typeof executeStreamCommand<RunSnapshot, RunEvent>> {
    return executeStreamCommand<RunSnapshot, RunEvent>(this.eventStore, this.pool, {
      streamId: runStreamId(runId),
      fold: foldRun,
      revisionOf: (state) => state.revision,
      decide: decideEvents,
      project: upsertRun,
      metadata: { actor, schemaVersion: RUN_EVENT_SCHEMA_VERSION },
    });
  }
}

export function actorOf(caller: Caller): string {
  return caller.kind === 'admin' ? 'admin' : `${caller.kind}:${caller.team ?? 'platform'}`;
}

/** The RunScheduled of a job's new run; its id derives from (job, Idempotency-Key) when a key is given. */
function scheduledRun(job: DefinedJob, request: EnqueueRequest, source: RunScheduledData['source']): RunScheduledData {
  const runId =
    request.scheduled?.runId ?? (request.idempotencyKey === undefined ? `run_${uuidV7().replace(/-/g, '')}` : derivedRunId(job.definition.name, request.idempotencyKey));
  return newRunScheduled(job.definition, { runId, dueAt: request.dueAt, payload: request.payload, idempotencyKey: request.idempotencyKey ?? runId, source: request.scheduled?.source ?? source });
}

function present(state: RunSnapshot): PresentRun {
  if (state.status === 'absent') throw new Error('run vanished');
  return state;
}
