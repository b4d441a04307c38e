import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DomainError } from '../../../../libs/domain/src/domain-error';
import { decide, type RunCommand } from '../../../../libs/domain/src/run/run-decider';
import { RUN_EVENT_SCHEMA_VERSION, type RunEvent, type RunScheduledData } from '../../../../libs/domain/src/run/run-events';
import { foldRun, type RunSnapshot } from '../../../../libs/domain/src/run/run-state';
import { runStreamId } from '../../../../libs/domain/src/streams';
import { uuidV7 } from '../../../../libs/event-store/src/append-validation';
import type { EventStore, RecordedEvent } from '../../../../libs/event-store/src/event-store.port';
import type { Clock } from '../../../../libs/platform/src/clock/clock';
import { CLOCK, EVENT_STORE, PG_POOL } from '../../../../libs/platform/src/runtime/tokens';
import type { Caller, TeamCaller } from '../auth/caller';
import type { DefinedJob } from '../jobs/jobs.service';
import { executeStreamCommand } from '../../../../libs/application/src/stream-command';
import { upsertRun } from '../../../../projections/runs.sql';

export type PresentRun = Exclude<RunSnapshot, { status: 'absent' }>;

export interface EnqueueRequest {
  readonly payload?: unknown;
  readonly dueAt: Date;
  readonly idempotencyKey?: string;
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
   * A run id derived from (job, Idempotency-Key) makes a repeated request hit
   * "stream exists": the same run comes back, created false.
   */
  async enqueue(caller: TeamCaller, job: DefinedJob, request: EnqueueRequest): Promise<{ run: PresentRun; created: boolean }> {
    const definition = job.definition;
    const runId = request.idempotencyKey === undefined ? `run_${uuidV7().replace(/-/g, '')}` : derivedRunId(definition.name, request.idempotencyKey);
    const scheduled: RunScheduledData = {
      runId,
      job: definition.name,
      team: definition.team,
      queue: definition.queue,
      priority: definition.priority,
      dueAt: request.dueAt.toISOString(),
      payload: request.payload === undefined ? definition.payload : request.payload,
      idempotencyKey: request.idempotencyKey ?? runId,
      retry: definition.retry,
      timeoutSeconds: definition.timeoutSeconds,
      source: 'api',
    };
    let created = false;
    const { state } = await this.execute(actorOf(caller), runId, (current) => {
      if (current.status !== 'absent') return [];
      created = true;
      return decide({ type: 'ScheduleRun', run: scheduled }, current);
    });
    const run = present(state);
    if (run.definition.team !== caller.team) throw new DomainError('not-found', `run ${runId} not found`);
    return { run, created };
  }

  /** Apply a command to a run the caller may act on; 404 for runs of other teams or queues. */
  async command(caller: Caller, runId: string, command: (now: Date) => RunCommand): Promise<PresentRun> {
    await this.load(caller, runId);
    const { state } = await this.execute(actorOf(caller), runId, (current) => decide(command(this.clock.now()), current));
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
      (caller.kind === 'admin' || (state.definition.team === caller.team && (caller.kind === 'team' || caller.queues.includes(state.definition.queue))));
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
  return caller.kind === 'admin' ? 'admin' : `${caller.kind}:${caller.team}`;
}

/** Stable across retries of the same request: sha256(job, key), shortened. */
export function derivedRunId(job: string, idempotencyKey: string): string {
  return `run_${createHash('sha256').update(job).update('\u0000').update(idempotencyKey).digest('base64url').slice(0, 27)}`;
}

function present(state: RunSnapshot): PresentRun {
  if (state.status === 'absent') throw new Error('run vanished');
  return state;
}
