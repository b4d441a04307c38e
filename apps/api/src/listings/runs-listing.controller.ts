import { Controller, Get, Inject, Query, UseGuards } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiOkResponse, ApiOperation, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsISO8601, IsOptional, IsString, Matches } from 'class-validator';
import { ListRuns } from '@chronicle/commands';
import { NAME_PATTERN, NAME_RULE, requireReader, RUN_STATES, type Caller, type RunState } from '@chronicle/domain';
import { CLOCK, type Clock } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { REST_PAGE } from '../http/page-names';
import { runView, type RunView } from '../runs/run-view';
import { ListingRefusals, QueueTeamQuery } from './jobs-listing.controller';
import { RunsPageResponse } from './listing-responses';

class RunsQuery extends QueueTeamQuery {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @Matches(NAME_PATTERN, { message: `job must be ${NAME_RULE}` })
  job?: string;

  @ApiPropertyOptional({ enum: RUN_STATES })
  @IsOptional()
  @IsIn(RUN_STATES)
  state?: RunState;

  @ApiPropertyOptional({ format: 'date-time', description: 'runs due at or after this instant' })
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  dueAfter?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'runs due strictly before this instant' })
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  dueBefore?: string;
}

/** GET /v1/runs: the team's runs (the admin: every team's), newest due first, keyset-paged. */
@Controller('v1/runs')
@UseGuards(AuthGuard)
export class RunsListingController {
  constructor(
    private readonly queries: QueryBus,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'listRuns',
    summary: "A team's runs (the admin: every team's), newest due first, keyset-paged",
  })
  @ApiOkResponse({ type: RunsPageResponse })
  @ListingRefusals()
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: RunsQuery,
  ): Promise<{ items: RunView[]; nextCursor: string | null }> {
    const { cursor, limit, dueAfter, dueBefore, ...filter } = query;
    const page = await this.queries.execute(
      new ListRuns(
        requireReader(caller),
        {
          ...filter,
          dueAfter: dueAfter === undefined ? undefined : new Date(dueAfter),
          dueBefore: dueBefore === undefined ? undefined : new Date(dueBefore),
        },
        { after: cursor, size: limit, names: REST_PAGE },
      ),
    );
    const now = this.clock.now();
    return { items: page.items.map(({ node }) => runView(node, now)), nextCursor: page.nextCursor };
  }
}
