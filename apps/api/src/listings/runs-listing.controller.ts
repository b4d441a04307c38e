import { Controller, Get, Inject, UseGuards } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { ListRuns, type UnavailableShards } from '@chronicle/commands';
import { requireReader, RUN_STATES, type Caller } from '@chronicle/domain';
import { CLOCK, type Clock } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { dateTime, oneOf, queryString, type Accepted } from '../http/body-schema';
import { CompiledQuery } from '../http/compiled-body';
import { REST_PAGE } from '../http/page-names';
import { runView, type RunView } from '../runs/run-view';
import { ListingRefusals, NAME_PARAMETER, QUEUE_TEAM_PARAMETERS } from './jobs-listing.controller';
import { RunsPageResponse } from './listing-responses';

const RunsQuery = queryString({
  ...QUEUE_TEAM_PARAMETERS,
  job: NAME_PARAMETER,
  state: oneOf(RUN_STATES),
  dueAfter: { ...dateTime(), description: 'runs due at or after this instant' },
  dueBefore: { ...dateTime(), description: 'runs due strictly before this instant' },
});
type RunsQuery = Accepted<typeof RunsQuery>;

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
    @CompiledQuery(RunsQuery) query: RunsQuery,
  ): Promise<{ items: RunView[]; nextCursor: string | null; unavailable?: readonly UnavailableShards[] }> {
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
    return {
      items: page.items.map(({ node }) => runView(node, now)),
      nextCursor: page.nextCursor,
      ...(page.unavailable === undefined ? {} : { unavailable: page.unavailable }),
    };
  }
}
