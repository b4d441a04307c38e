import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { ABSENT, DomainError, type Caller, type PresentRun } from '@chronicle/domain';
import type { RecordedEvent } from '@chronicle/event-store';
import { findRunSnapshot } from '@chronicle/projections';
import { RunServers } from '../shards/run-servers';
import { isRetiredRun } from './retired-runs.sql';
import { readRun, visibleRun } from './run-stream';

/** A run's state, from the `runs` read model (written through by every decision). */
export class GetRun extends Query<PresentRun> {
  constructor(
    readonly caller: Caller,
    readonly runId: string,
  ) {
    super();
  }
}

/**
 * A run as it was at an instant: its events recorded by then, folded (an auditor's question; the read
 * model knows only now). Absent before its stream existed: not-found.
 */
export class GetRunAsOf extends Query<PresentRun> {
  constructor(
    readonly caller: Caller,
    readonly runId: string,
    readonly asOf: Date,
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
  constructor(private readonly servers: RunServers) {}

  async execute({ caller, runId }: GetRun): Promise<PresentRun> {
    const { pool } = this.servers.ofRun(runId);
    const run = await findRunSnapshot(pool, runId);
    if (run === undefined && (await isRetiredRun(pool, runId)))
      throw new DomainError('gone', `run ${runId} finished longer ago than retention keeps; its row is dropped`);
    return visibleRun(caller, run ?? ABSENT, runId);
  }
}

@QueryHandler(GetRunAsOf)
export class GetRunAsOfHandler implements IQueryHandler<GetRunAsOf> {
  constructor(private readonly servers: RunServers) {}

  async execute({ caller, runId, asOf }: GetRunAsOf): Promise<PresentRun> {
    return visibleRun(caller, (await readRun(this.servers.ofRun(runId).eventStore, runId, asOf)).state, runId);
  }
}

@QueryHandler(GetRunEvents)
export class GetRunEventsHandler implements IQueryHandler<GetRunEvents> {
  constructor(private readonly servers: RunServers) {}

  async execute({ caller, runId }: GetRunEvents): Promise<readonly RecordedEvent[]> {
    const { recorded, state } = await readRun(this.servers.ofRun(runId).eventStore, runId);
    visibleRun(caller, state, runId);
    return recorded;
  }
}
