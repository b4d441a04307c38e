import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Caller, PresentRun } from '@chronicle/domain';
import type { EventStore, RecordedEvent } from '@chronicle/event-store';
import { EVENT_STORE } from '@chronicle/platform';
import { readRun, visibleRun } from './run-stream';

/** A run's state, folded from its stream. */
export class GetRun extends Query<PresentRun> {
  constructor(
    readonly caller: Caller,
    readonly runId: string,
  ) {
    super();
  }
}

/** A run's whole history, in order: what an auditor replays. */
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
  constructor(@Inject(EVENT_STORE) private readonly eventStore: EventStore) {}

  async execute({ caller, runId }: GetRun): Promise<PresentRun> {
    return visibleRun(caller, (await readRun(this.eventStore, runId)).state, runId);
  }
}

@QueryHandler(GetRunEvents)
export class GetRunEventsHandler implements IQueryHandler<GetRunEvents> {
  constructor(@Inject(EVENT_STORE) private readonly eventStore: EventStore) {}

  async execute({ caller, runId }: GetRunEvents): Promise<readonly RecordedEvent[]> {
    const { recorded, state } = await readRun(this.eventStore, runId);
    visibleRun(caller, state, runId);
    return recorded;
  }
}
