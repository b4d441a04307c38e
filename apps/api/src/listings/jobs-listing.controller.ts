import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiOkResponse, ApiOperation, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
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
import { ApiProblems } from '../http/problem-responses';
import { CurrentCaller } from '../auth/current-caller';
import { REST_PAGE } from '../http/page-names';
import { jobView, type JobView } from '../jobs/job-view';
import { JobsPageResponse } from './listing-responses';

/** The query of a listing page, shared by GET /v1/jobs and GET /v1/runs. */
export class PageQuery {
  @ApiPropertyOptional({ description: 'the nextCursor of the previous page' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  cursor?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_PAGE_SIZE, default: 50 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  limit?: number;
}

/** A listing's page, of one queue's and one team's items (either or both may be left out). */
export class QueueTeamQuery extends PageQuery {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @Matches(NAME_PATTERN, { message: `queue must be ${NAME_RULE}` })
  queue?: string;

  @ApiPropertyOptional({ description: "a team token lists its own team's only; the admin any team's, or all" })
  @IsOptional()
  @IsString()
  @Matches(TEAM_ID_PATTERN, { message: `team must be ${TEAM_ID_RULE}` })
  team?: string;
}

class JobsQuery extends QueueTeamQuery {}

/** The refusals of a listing, in the OpenAPI document. */
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
    @Query() query: JobsQuery,
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
