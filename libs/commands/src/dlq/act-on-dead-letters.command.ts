import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { BulkFilter, TeamCaller } from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { BulkEngine } from '../bulk/bulk-engine';
import { processOwner } from '../bulk/bulk-operation-runner';
import { RunServers } from '../shards/run-servers';
import { ReadySignal } from '../workers/ready-signal';

/** Which dead runs a bulk replay or discard takes: each field given narrows it. */
export interface DeadLetterSelection {
  readonly job?: string | undefined;
  /** Their last error contains this text (case-insensitive). */
  readonly errorContains?: string | undefined;
  /** Dead at or after. */
  readonly deadAfter?: Date | undefined;
  /** Dead before. */
  readonly deadBefore?: Date | undefined;
}

export interface DeadLettersProgress {
  /** The runs the selection held when the operation began. */
  readonly matched: number;
  /** Of those, looked at so far. */
  readonly processed: number;
  /** Replayed or discarded so far. */
  readonly acted: number;
  /** Changed meanwhile (replayed or discarded by someone else), so left alone. */
  readonly skipped: number;
}

/** POST /v1/dlq:replay and :discard: every dead run of the team the selection holds, in batches. */
export class ActOnDeadLetters extends Command<DeadLettersProgress> {
  constructor(
    readonly caller: TeamCaller,
    readonly action: 'replay' | 'discard',
    readonly selection: DeadLetterSelection,
    readonly dryRun: boolean,
    /** Told after each batch (a streamed answer shows it); the next batch waits for it. */
    readonly onProgress: (progress: DeadLettersProgress) => void | Promise<void> = () => undefined,
  ) {
    super();
  }
}

/**
 * A bulk operation (BulkEngine, libs/commands/src/bulk) of action replay-dead or discard-dead, run to its
 * end in the request: the selection taken when it begins (runs dead by then: a run replayed here that
 * dies again is not taken twice), a batch at a time, each a unit of work that locks the runs, decides each
 * from its locked row and appends its events with the caller as actor. A run that is no longer a dead,
 * kept run of the selection is skipped, never forced. Like every bulk operation it has its row (GET
 * /v1/bulk-operations/{id}: stoppable, resumable, taken over should this process die) and one entry in the
 * admin trail; a dry run only counts.
 */
@CommandHandler(ActOnDeadLetters)
export class ActOnDeadLettersHandler implements ICommandHandler<ActOnDeadLetters> {
  private readonly engine: BulkEngine;

  constructor(@Inject(CLOCK) clock: Clock, ready: ReadySignal, servers: RunServers) {
    this.engine = new BulkEngine(servers, ready, clock, processOwner());
  }

  async execute({ caller, action, selection, dryRun, onProgress }: ActOnDeadLetters): Promise<DeadLettersProgress> {
    const bulkAction = action === 'replay' ? 'replay-dead' : 'discard-dead';
    const filter: BulkFilter = {
      ...(selection.job === undefined ? {} : { job: selection.job }),
      ...(selection.errorContains === undefined ? {} : { error: selection.errorContains }),
      ...(selection.deadAfter === undefined ? {} : { deadAfter: selection.deadAfter.toISOString() }),
      ...(selection.deadBefore === undefined ? {} : { deadBefore: selection.deadBefore.toISOString() }),
    };
    if (dryRun) {
      const matched = await this.engine.count(caller, bulkAction, filter);
      return { matched, processed: 0, acted: 0, skipped: 0 };
    }
    const done = await this.engine.run(await this.engine.start(caller, bulkAction, filter), onProgress);
    return { matched: done.matched, processed: done.processed, acted: done.acted, skipped: done.skipped };
  }
}
