import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { ABSENT, DomainError, runStreamId, type PresentRun, type ReaderCaller } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { findRunSnapshot } from '@chronicle/projections';
import { visibleRun } from '../runs/run-stream';
import { attemptHistory, type AttemptView } from './attempt-history';

/** GET /v1/dlq/{id}: a dead run (the read model) with every attempt it had (its events). */
export class GetDeadLetter extends Query<{ run: PresentRun; attempts: AttemptView[] }> {
  constructor(
    readonly caller: ReaderCaller,
    readonly runId: string,
  ) {
    super();
  }
}

@QueryHandler(GetDeadLetter)
export class GetDeadLetterHandler implements IQueryHandler<GetDeadLetter> {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
  ) {}

  async execute({ caller, runId }: GetDeadLetter): Promise<{ run: PresentRun; attempts: AttemptView[] }> {
    // The entry from the read model; its attempts from the log, which alone keeps each one.
    const run = visibleRun(caller, (await findRunSnapshot(this.pool, runId)) ?? ABSENT, runId);
    if (run.status !== 'dead' || run.discarded)
      throw new DomainError('not-found', `run ${runId} is not in the dead-letter queue`);
    return { run, attempts: attemptHistory(await this.eventStore.readStream(runStreamId(runId))) };
  }
}
