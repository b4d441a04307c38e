import { randomInt } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import type { DomainError, WorkerCaller } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { RunReservations } from '../unit-of-work/run-reservations';
import { decideForWorker } from './decide-for-worker';
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
 * Completions, one or many in one unit of work (decideForWorker): a stale
 * fencing token refuses that run alone.
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
    private readonly reservations: RunReservations,
  ) {}

  async execute({ caller, completions }: CompleteRuns): Promise<CompletionResult[]> {
    const wanted = new Map(completions.map((c) => [c.runId, c]));
    const decisions = await decideForWorker(
      this.eventStore,
      this.pool,
      this.reservations,
      caller,
      [...wanted.keys()],
      (run, now) => ({
        type: 'CompleteRun',
        ...wanted.get(run.definition.runId)!,
        now,
        // The backoff's random draw, in [0, 1): the domain takes it as data.
        draw: randomInt(1_000_000) / 1_000_000,
      }),
    );
    if (decisions.some((d) => 'run' in d && d.run.status === 'retry_wait')) this.ready.notify();
    const byRun = new Map(decisions.map((d) => [d.runId, d]));
    return completions.map(({ runId }) => {
      const decision = byRun.get(runId)!;
      if ('refused' in decision) return { runId, refused: decision.refused };
      const { run } = decision;
      return { runId, state: run.status, retryAt: run.status === 'retry_wait' ? run.availableAt : null };
    });
  }
}
