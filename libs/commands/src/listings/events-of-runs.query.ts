import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { runStreamId } from '@chronicle/domain';
import type { RecordedEvent } from '@chronicle/event-store';
import { RunServers } from '../shards/run-servers';

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
  constructor(private readonly servers: RunServers) {}

  async execute({ runIds }: GetEventsOfRuns): Promise<Map<string, readonly RecordedEvent[]>> {
    // One read of each server's log the runs are on.
    const read = await Promise.all(
      this.servers
        .split(runIds, (id) => this.servers.ofRun(id))
        .map(([server, ids]) => server.eventStore.readStreams(ids.map(runStreamId))),
    );
    const byStream = new Map(read.flatMap((streams) => [...streams]));
    return new Map(runIds.map((id) => [id, byStream.get(runStreamId(id)) ?? []]));
  }
}
