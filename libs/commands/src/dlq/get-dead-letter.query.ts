import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { ABSENT, DomainError, runStreamId, type PresentRun, type ReaderCaller } from '@chronicle/domain';
import { findRunSnapshot } from '@chronicle/projections';
import { RunServers } from '../shards/run-servers';
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
  constructor(private readonly servers: RunServers) {}

  async execute({ caller, runId }: GetDeadLetter): Promise<{ run: PresentRun; attempts: AttemptView[] }> {
    // The entry from the read model; its attempts from the log, which alone keeps each one.
    const { pool, eventStore } = this.servers.ofRun(runId);
    const run = visibleRun(caller, (await findRunSnapshot(pool, runId)) ?? ABSENT, runId);
    if (run.status !== 'dead' || run.discarded)
      throw new DomainError('not-found', `run ${runId} is not in the dead-letter queue`);
    return { run, attempts: attemptHistory(await eventStore.readStream(runStreamId(runId))) };
  }
}
