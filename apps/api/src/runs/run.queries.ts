import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { RecordedEvent } from '../../../../libs/event-store/src/event-store.port';
import type { Caller } from '../auth/caller';
import { RunsService, type PresentRun } from './runs.service';

export class GetRun extends Query<PresentRun> {
  constructor(
    readonly caller: Caller,
    readonly runId: string,
  ) {
    super();
  }
}

export class GetRunEvents extends Query<readonly RecordedEvent[]> {
  constructor(
    readonly caller: Caller,
    readonly runId: string,
  ) {
    super();
  }
}

@QueryHandler(GetRun)
export class GetRunHandler implements IQueryHandler<GetRun> {
  constructor(private readonly runs: RunsService) {}
  execute(query: GetRun): Promise<PresentRun> {
    return this.runs.load(query.caller, query.runId);
  }
}

@QueryHandler(GetRunEvents)
export class GetRunEventsHandler implements IQueryHandler<GetRunEvents> {
  constructor(private readonly runs: RunsService) {}
  execute(query: GetRunEvents): Promise<readonly RecordedEvent[]> {
    return this.runs.events(query.caller, query.runId);
  }
}

export const RUN_QUERY_HANDLERS = [GetRunHandler, GetRunEventsHandler];
