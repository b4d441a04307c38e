import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import type { PresentRun, ReaderCaller } from '@chronicle/domain';
import { PG_POOL } from '@chronicle/platform';
import { decodeTimeCursor, pageOf, sizeOf, type Page, type PageRequest } from '../listings/page';
import { listDeadRuns } from './dead-letters.sql';

/** GET /v1/dlq and GraphQL's deadLetters: the team's dead runs (the admin: every team's), newest first. */
export class ListDeadLetters extends Query<Page<PresentRun>> {
  constructor(
    readonly caller: ReaderCaller,
    readonly job: string | undefined,
    readonly page: PageRequest,
  ) {
    super();
  }
}

@QueryHandler(ListDeadLetters)
export class ListDeadLettersHandler implements IQueryHandler<ListDeadLetters> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async execute({ caller, job, page }: ListDeadLetters): Promise<Page<PresentRun>> {
    const size = sizeOf(page);
    const key = page.after == null ? undefined : decodeTimeCursor(page.after, page.names.after);
    const after = key === undefined ? undefined : { deadAt: key.time, runId: key.id };
    const rows = await listDeadRuns(this.pool, caller.kind === 'team' ? caller.team : undefined, job, after, size + 1);
    return pageOf(rows, size, (run) => [run.death?.deadAt ?? '', run.definition.runId]);
  }
}
