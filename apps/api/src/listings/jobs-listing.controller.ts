import { Controller, Get, UseGuards } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { ListJobs } from '@chronicle/commands';
import {
  MAX_PAGE_SIZE,
  NAME_PATTERN,
  NAME_RULE,
  requireReader,
  TEAM_ID_PATTERN,
  TEAM_ID_RULE,
  type Caller,
} from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { integer, queryString, text, type Accepted } from '../http/body-schema';
import { CompiledQuery } from '../http/compiled-body';
import { ApiProblems } from '../http/problem-responses';
import { CurrentCaller } from '../auth/current-caller';
import { REST_PAGE } from '../http/page-names';
import { jobView, type JobView } from '../jobs/job-view';
import { JobsPageResponse } from './listing-responses';

/** The parameters of a listing page, shared by GET /v1/jobs, GET /v1/runs and GET /v1/audit. */
export const PAGE_PARAMETERS = {
  cursor: { ...text({ maxLength: 500 }), description: 'the nextCursor of the previous page' },
  limit: { ...integer(1, MAX_PAGE_SIZE), default: 50 },
};

/** A name of the filters (`job`, `queue`): the refusal says `job must be <the rule>`. */
export const NAME_PARAMETER = text({ pattern: NAME_PATTERN, rule: NAME_RULE });

/** A listing's page, of one queue's and one team's items (either or both may be left out). */
export const QUEUE_TEAM_PARAMETERS = {
  ...PAGE_PARAMETERS,
  queue: NAME_PARAMETER,
  team: {
    ...text({ pattern: TEAM_ID_PATTERN, rule: TEAM_ID_RULE }),
    description: "a team token lists its own team's only; the admin any team's, or all",
  },
};

const JobsQuery = queryString(QUEUE_TEAM_PARAMETERS);
type JobsQuery = Accepted<typeof JobsQuery>;

/** What a listing refuses: a wrong parameter; a worker token, or another team's `team=`. */
export function ListingRefusals(): MethodDecorator {
  return ApiProblems('validation-error', 'forbidden');
}

/** GET /v1/jobs: the team's jobs (the admin: every team's), by name, keyset-paged. */
@Controller('v1/jobs')
@UseGuards(AuthGuard)
export class JobsListingController {
  constructor(private readonly queries: QueryBus) {}

  @Get()
  @ApiOperation({ operationId: 'listJobs', summary: "A team's jobs (the admin: every team's), by name, keyset-paged" })
  @ApiOkResponse({ type: JobsPageResponse })
  @ListingRefusals()
  async list(
    @CurrentCaller() caller: Caller,
    @CompiledQuery(JobsQuery) query: JobsQuery,
  ): Promise<{ items: JobView[]; nextCursor: string | null }> {
    const page = await this.queries.execute(
      new ListJobs(
        requireReader(caller),
        { team: query.team, queue: query.queue },
        { after: query.cursor, size: query.limit, names: REST_PAGE },
      ),
    );
    return { items: page.items.map(({ node }) => jobView(node)), nextCursor: page.nextCursor };
  }
}
