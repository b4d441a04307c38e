import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { DefinedJob, ReaderCaller } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE } from '@chronicle/platform';
import { loadOwnJob } from './job-stream';

/**
 * A job of the caller's team (any job, for the admin), from its stream (never a lagging row); with
 * `asOf`, as it was then.
 */
export class GetJob extends Query<DefinedJob> {
  constructor(
    readonly caller: ReaderCaller,
    readonly name: string,
    readonly asOf?: Date,
  ) {
    super();
  }
}

@QueryHandler(GetJob)
export class GetJobHandler implements IQueryHandler<GetJob> {
  constructor(@Inject(EVENT_STORE) private readonly eventStore: EventStore) {}

  execute({ caller, name, asOf }: GetJob): Promise<DefinedJob> {
    return loadOwnJob(this.eventStore, caller, name, asOf);
  }
}
