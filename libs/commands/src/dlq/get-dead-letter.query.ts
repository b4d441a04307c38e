import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { DomainError, type PresentRun, type TeamCaller } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE } from '@chronicle/platform';
import { readRun, visibleRun } from '../runs/run-stream';
import { attemptHistory, type AttemptView } from './attempt-history';

/** GET /v1/dlq/{id}: a dead run with every attempt it had, from its events. */
export class GetDeadLetter extends Query<{ run: PresentRun; attempts: AttemptView[] }> {
  constructor(
    readonly caller: TeamCaller,
    readonly runId: string,
  ) {
    super();
  }
}

@QueryHandler(GetDeadLetter)
export class GetDeadLetterHandler implements IQueryHandler<GetDeadLetter> {
  constructor(@Inject(EVENT_STORE) private readonly eventStore: EventStore) {}

  async execute({ caller, runId }: GetDeadLetter): Promise<{ run: PresentRun; attempts: AttemptView[] }> {
    const { recorded, state } = await readRun(this.eventStore, runId);
    const run = visibleRun(caller, state, runId);
    if (run.status !== 'dead' || run.discarded)
      throw new DomainError('not-found', `run ${runId} is not in the dead-letter queue`);
    return { run, attempts: attemptHistory(recorded) };
  }
}
