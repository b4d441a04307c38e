import { randomInt } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import {
  decide,
  DomainError,
  RUN_EVENT_SCHEMA_VERSION,
  type PresentRun,
  type RunEvent,
  type WorkerCaller,
} from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { decideAndAppendRuns } from '../unit-of-work/decide-runs';
import { lockAndLoadRuns } from './complete-runs.sql';
import { ReadySignal } from './ready-signal';

export interface Completion {
  readonly runId: string;
  readonly fencingToken: number;
  readonly outcome: 'success' | 'failure';
  readonly error: string | null;
  readonly retryable: boolean;
}

/** Per run: its state after the completion, or why it was refused (stale-lease, not-found). */
export type CompletionResult =
  | { readonly runId: string; readonly state: string; readonly retryAt: string | null }
  | { readonly runId: string; readonly refused: DomainError };

/**
 * Completions, one or many in one transaction: lock the runs' streams, read
 * their rows, decide each (a stale fencing token refuses that run alone),
 * append every outcome in one multi-stream append expecting the revisions
 * read, write the rows through. Five round trips for up to 100 runs.
 */
export class CompleteRuns extends Command<CompletionResult[]> {
  constructor(
    readonly caller: WorkerCaller,
    readonly completions: readonly Completion[],
  ) {
    super();
  }
}

@CommandHandler(CompleteRuns)
export class CompleteRunsHandler implements ICommandHandler<CompleteRuns> {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly ready: ReadySignal,
  ) {}

  async execute({ caller, completions }: CompleteRuns): Promise<CompletionResult[]> {
    const wanted = new Map(completions.map((c) => [c.runId, c]));
    const refused = new Map<string, DomainError>();
    const decided = await this.eventStore.unitOfWork(this.pool, async (uow) => {
      const { runs, now } = await lockAndLoadRuns(uow.tx, [...wanted.keys()]);
      const visible = runs.filter((run) => mayComplete(caller, run));
      const decideOne = (run: PresentRun): RunEvent[] | null => {
        const completion = wanted.get(run.definition.runId)!;
        try {
          // The backoff's random draw, in [0, 1): the domain takes it as data.
          return decide({ type: 'CompleteRun', ...completion, now, draw: randomInt(1_000_000) / 1_000_000 }, run);
        } catch (err) {
          if (!(err instanceof DomainError)) throw err;
          refused.set(run.definition.runId, err);
          return null;
        }
      };
      return decideAndAppendRuns(uow, visible, decideOne, {
        actor: `worker:${caller.team ?? 'platform'}`,
        schemaVersion: RUN_EVENT_SCHEMA_VERSION,
      });
    });
    const after = new Map(decided.map((d) => [d.after.definition.runId, d.after]));
    if (decided.some((d) => d.after.status === 'retry_wait')) this.ready.notify();
    return completions.map(({ runId }) => {
      const run = after.get(runId);
      if (run !== undefined)
        return { runId, state: run.status, retryAt: run.status === 'retry_wait' ? run.availableAt : null };
      return { runId, refused: refused.get(runId) ?? new DomainError('not-found', `run ${runId} not found`) };
    });
  }
}

/** A worker completes runs of its queues, of its team unless it is a platform worker; others read as absent. */
function mayComplete(caller: WorkerCaller, run: PresentRun): boolean {
  return caller.queues.includes(run.definition.queue) && (caller.team === null || caller.team === run.definition.team);
}
