import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { listedTeam, type DefinedJob, type ReaderCaller } from '@chronicle/domain';
import { PG_POOL } from '@chronicle/platform';
import { decodeCursor, pageOf, sizeOf, type Page, type PageRequest } from './page';
import { listJobs } from './jobs-listing.sql';

/** GET /v1/jobs and GraphQL's jobs: a team's jobs (the admin: any team's), by name, a keyset page at a time. */
export class ListJobs extends Query<Page<DefinedJob>> {
  constructor(
    readonly caller: ReaderCaller,
    readonly filter: { readonly team?: string | undefined; readonly queue?: string | undefined },
    readonly page: PageRequest,
  ) {
    super();
  }
}

@QueryHandler(ListJobs)
export class ListJobsHandler implements IQueryHandler<ListJobs> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async execute({ caller, filter, page }: ListJobs): Promise<Page<DefinedJob>> {
    const size = sizeOf(page);
    const after = page.after == null ? undefined : decodeCursor(page.after, 1, page.names.after)[0];
    const rows = await listJobs(
      this.pool,
      { team: listedTeam(caller, filter.team), queue: filter.queue },
      after,
      size + 1,
    );
    return pageOf(rows, size, (job) => [job.definition.name]);
  }
}
