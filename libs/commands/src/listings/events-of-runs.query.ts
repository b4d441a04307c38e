import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { runStreamId } from '@chronicle/domain';
import type { EventStore, RecordedEvent } from '@chronicle/event-store';
import { EVENT_STORE } from '@chronicle/platform';

/**
 * The whole history of each of these runs, from the log, by run id: one read for a page of runs
 * (GraphQL's Run.events). The runs are ones the caller was already shown (a query that checked them
 * gave them), so no caller is asked for here.
 */
export class GetEventsOfRuns extends Query<Map<string, readonly RecordedEvent[]>> {
  constructor(readonly runIds: readonly string[]) {
    super();
  }
}

@QueryHandler(GetEventsOfRuns)
export class GetEventsOfRunsHandler implements IQueryHandler<GetEventsOfRuns> {
  constructor(@Inject(EVENT_STORE) private readonly eventStore: EventStore) {}

  async execute({ runIds }: GetEventsOfRuns): Promise<Map<string, readonly RecordedEvent[]>> {
    const byStream = await this.eventStore.readStreams(runIds.map(runStreamId));
    return new Map(runIds.map((id) => [id, byStream.get(runStreamId(id)) ?? []]));
  }
}
