import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import type { PresentRun, ReaderCaller } from '@chronicle/domain';
import { PG_POOL } from '@chronicle/platform';
import { decodeTimeCursor, pageOf, sizeOf, withUnavailable, type Page, type PageRequest } from '../listings/page';
import { RunServers } from '../shards/run-servers';
import { teamIds } from '../teams/team-ids.sql';
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
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly servers: RunServers,
  ) {}

  async execute({ caller, job, page }: ListDeadLetters): Promise<Page<PresentRun>> {
    const size = sizeOf(page);
    const key = page.after == null ? undefined : decodeTimeCursor(page.after, page.names.after);
    const after = key === undefined ? undefined : { deadAt: key.time, runId: key.id };
    const teams = caller.kind === 'team' ? caller.team : await teamIds(this.pool);
    // The next page of each server's, merged in the same order: the first size + 1 of them are the page's.
    const { items, unavailable } = await this.servers.merged(
      (server) => listDeadRuns(server.pool, teams, job, after, size + 1),
      (run) => [run.death?.deadAt ?? '', run.definition.runId],
      size + 1,
    );
    return withUnavailable(
      pageOf(items, size, (run) => [run.death?.deadAt ?? '', run.definition.runId]),
      unavailable,
    );
  }
}
