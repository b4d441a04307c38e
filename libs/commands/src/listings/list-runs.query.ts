import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { listedTeam, type PresentRun, type ReaderCaller, type RunState } from '@chronicle/domain';
import { CLOCK, PG_POOL, type Clock } from '@chronicle/platform';
import { decodeTimeCursor, pageOf, sizeOf, withUnavailable, type Page, type PageRequest } from './page';
import { RunServers } from '../shards/run-servers';
import { teamIds } from '../teams/team-ids.sql';
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

/**
 * A page over every server the runs are on: each server's next page after the same key, merged in the
 * listing's order (RunServers.merged).
 */
@QueryHandler(ListRuns)
export class ListRunsHandler implements IQueryHandler<ListRuns> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly servers: RunServers,
  ) {}

  async execute({ caller, filter, page }: ListRuns): Promise<Page<PresentRun>> {
    const size = sizeOf(page);
    const team = listedTeam(caller, filter.team);
    const everyTeam = team === undefined && filter.job === undefined && filter.queue === undefined;
    const query = {
      filter: { ...filter, team },
      after: runKeyOf(page),
      limit: size + 1,
      now: this.clock.now(),
      ...(everyTeam && this.servers.all.length > 1 ? { teams: await teamIds(this.pool) } : {}),
    };
    const { items, unavailable } = await this.servers.merged(
      (server) => listRuns(server.pool, query),
      listedKey,
      size + 1,
    );
    return withUnavailable(runsPage(items, size), unavailable);
  }
}

@QueryHandler(ListRunsOfJobs)
export class ListRunsOfJobsHandler implements IQueryHandler<ListRunsOfJobs> {
  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly servers: RunServers,
  ) {}

  async execute({ caller, jobs, state, page }: ListRunsOfJobs): Promise<Map<string, Page<PresentRun>>> {
    const size = sizeOf(page);
    const query = {
      filter: { team: listedTeam(caller, undefined), state },
      after: runKeyOf(page),
      limit: size + 1,
      now: this.clock.now(),
    };
    // A job's runs are all on its shard's server.
    const byJob = new Map<string, ListedRun[]>();
    for (const [server, ofServer] of this.servers.split(jobs, (job) => this.servers.ofJob(job)))
      for (const [job, rows] of await listRunsOfJobs(server.pool, ofServer, query)) byJob.set(job, rows);
    return new Map(jobs.map((job) => [job, runsPage(byJob.get(job) ?? [], size)]));
  }
}

function listedKey({ key }: ListedRun): [string, string] {
  return [key.dueAt.toISOString(), key.runId];
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
