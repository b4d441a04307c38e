import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { listedTeam, type PresentRun, type ReaderCaller, type RunState } from '@chronicle/domain';
import { CLOCK, PG_POOL, type Clock } from '@chronicle/platform';
import { decodeTimeCursor, pageOf, sizeOf, type Page, type PageRequest } from './page';
import { listRuns, listRunsOfJobs, type ListedRun, type RunKey, type RunsFilter } from './runs-listing.sql';

/**
 * The filters of GET /v1/runs and GraphQL's runs(filter:), as the caller gave them: the listing's own,
 * with `team` the one asked for (listedTeam decides the one allowed).
 */
export type RunsListing = RunsFilter;

/** The runs a team (its own) or the admin (any team's) may see, newest due first, a keyset page at a time. */
export class ListRuns extends Query<Page<PresentRun>> {
  constructor(
    readonly caller: ReaderCaller,
    readonly filter: RunsListing,
    readonly page: PageRequest,
  ) {
    super();
  }
}

/** A page of runs of each of these jobs (GraphQL's Job.runs, batched for a page of jobs). */
export class ListRunsOfJobs extends Query<Map<string, Page<PresentRun>>> {
  constructor(
    readonly caller: ReaderCaller,
    readonly jobs: readonly string[],
    readonly state: RunState | undefined,
    readonly page: PageRequest,
  ) {
    super();
  }
}

@QueryHandler(ListRuns)
export class ListRunsHandler implements IQueryHandler<ListRuns> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ caller, filter, page }: ListRuns): Promise<Page<PresentRun>> {
    const size = sizeOf(page);
    const rows = await listRuns(this.pool, {
      filter: { ...filter, team: listedTeam(caller, filter.team) },
      after: runKeyOf(page),
      limit: size + 1,
      now: this.clock.now(),
    });
    return runsPage(rows, size);
  }
}

@QueryHandler(ListRunsOfJobs)
export class ListRunsOfJobsHandler implements IQueryHandler<ListRunsOfJobs> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ caller, jobs, state, page }: ListRunsOfJobs): Promise<Map<string, Page<PresentRun>>> {
    const size = sizeOf(page);
    const byJob = await listRunsOfJobs(this.pool, jobs, {
      filter: { team: listedTeam(caller, undefined), state },
      after: runKeyOf(page),
      limit: size + 1,
      now: this.clock.now(),
    });
    return new Map([...byJob].map(([job, rows]) => [job, runsPage(rows, size)]));
  }
}

function runsPage(rows: readonly ListedRun[], size: number): Page<PresentRun> {
  const page = pageOf(rows, size, ({ key }) => [key.dueAt.toISOString(), key.runId]);
  return { items: page.items.map(({ node, cursor }) => ({ node: node.run, cursor })), nextCursor: page.nextCursor };
}

function runKeyOf(page: PageRequest): RunKey | undefined {
  if (page.after == null) return undefined;
  const { time, id } = decodeTimeCursor(page.after, page.names.after);
  return { dueAt: new Date(time), runId: id };
}
