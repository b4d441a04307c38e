import { Controller, Get, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiParam } from '@nestjs/swagger';
import type { Response } from 'express';
import {
  ChangeBulkOperation,
  GetBulkOperation,
  ListBulkOperations,
  PreviewBulkOperation,
  StartBulkOperation,
} from '@chronicle/commands';
import { BULK_STATUSES, requireReader, type Caller } from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { oneOf, queryString, type Accepted } from '../http/body-schema';
import { CompiledBody, CompiledQuery } from '../http/compiled-body';
import { REST_PAGE } from '../http/page-names';
import { ApiProblems } from '../http/problem-responses';
import { PAGE_PARAMETERS, QUEUE_TEAM_PARAMETERS } from '../listings/jobs-listing.controller';
import {
  BulkOperationAnswer,
  BulkOperationBody,
  BulkOperationsPage,
  BulkPreviewAnswer,
  bulkFilterOf,
  bulkOperationView,
  bulkSampleView,
  type BulkOperationView,
  type BulkSampleView,
} from './bulk-dto';

const BulkOperationsQuery = queryString({
  ...PAGE_PARAMETERS,
  team: QUEUE_TEAM_PARAMETERS.team,
  status: oneOf(BULK_STATUSES),
});
type BulkOperationsQuery = Accepted<typeof BulkOperationsQuery>;

const OPERATION_ID = ApiParam({
  name: 'id',
  description: 'the operation id',
  example: 'bulk_019a3c1e2f7b7c4e8d2a5b6c7d8e9f01',
});

/**
 * Bulk operations (docs/api.md, "Bulk operations"): cancel runs, pause or resume jobs, replay or discard
 * dead runs, every one a filter selects. A dry run first (the count and a sample); then the operation runs
 * in the background in batches of 100, its progress in its row, stoppable and resumable. A team acts on
 * its own team's; the admin on any team's.
 */
@Controller('v1/bulk-operations')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // team or admin tokens; a team token on its own team's only
export class BulkOperationsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post()
  @ApiOperation({
    operationId: 'startBulkOperation',
    summary:
      'Cancel runs, pause or resume jobs, replay or discard dead runs by a filter; dryRun counts (team or admin)',
  })
  @ApiAnswer(200, BulkPreviewAnswer, { description: 'dryRun: how many the filter selects, and the first 10' })
  @ApiAnswer(202, BulkOperationAnswer, { description: 'started: it runs in the background; GET it for its progress' })
  @ApiProblems('validation-error', 'not-found')
  async start(
    @CurrentCaller() caller: Caller,
    @CompiledBody(BulkOperationBody) body: BulkOperationBody,
    @Res({ passthrough: true }) response: Response,
  ): Promise<BulkOperationView | { action: string; dryRun: true; matched: number; sample: BulkSampleView[] }> {
    const reader = requireReader(caller);
    const filter = bulkFilterOf(body.filter);
    if (body.dryRun === true) {
      const { matched, sample } = await this.queries.execute(new PreviewBulkOperation(reader, body.action, filter));
      response.status(200);
      return { action: body.action, dryRun: true, matched, sample: sample.map(bulkSampleView) };
    }
    const operation = await this.commands.execute(new StartBulkOperation(reader, body.action, filter));
    response.status(202);
    return bulkOperationView(operation);
  }

  @Get()
  @ApiOperation({
    operationId: 'listBulkOperations',
    summary: "Bulk operations, newest first: a team's own, the admin's every team's (team or admin)",
  })
  @ApiAnswer(200, BulkOperationsPage, { description: 'a page of operations' })
  @ApiProblems('validation-error')
  async list(
    @CurrentCaller() caller: Caller,
    @CompiledQuery(BulkOperationsQuery) query: BulkOperationsQuery,
  ): Promise<{ items: BulkOperationView[]; nextCursor: string | null }> {
    const page = await this.queries.execute(
      new ListBulkOperations(
        requireReader(caller),
        { team: query.team, status: query.status },
        { after: query.cursor, size: query.limit, names: REST_PAGE },
      ),
    );
    return { items: page.items.map(({ node }) => bulkOperationView(node)), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getBulkOperation', summary: 'A bulk operation and its progress (team or admin)' })
  @OPERATION_ID
  @ApiAnswer(200, BulkOperationAnswer, { description: 'the operation' })
  @ApiProblems('not-found')
  async get(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<BulkOperationView> {
    return bulkOperationView(await this.queries.execute(new GetBulkOperation(requireReader(caller), id)));
  }

  /** POST /v1/bulk-operations/{id}:stop (the colon is literal). */
  @Post(':id\\:stop')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'stopBulkOperation',
    summary: 'Stop a bulk operation after the batch under way; resumable (team or admin)',
  })
  @OPERATION_ID
  @ApiAnswer(200, BulkOperationAnswer, { description: 'stopping (its batch under way ends first), or stopped' })
  @ApiProblems('not-found', 'invalid-transition')
  async stop(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<BulkOperationView> {
    return bulkOperationView(await this.commands.execute(new ChangeBulkOperation(requireReader(caller), id, 'stop')));
  }

  @Post(':id\\:resume')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'resumeBulkOperation',
    summary: 'Resume a stopped or failed bulk operation from where it was (team or admin)',
  })
  @OPERATION_ID
  @ApiAnswer(200, BulkOperationAnswer, { description: 'running again' })
  @ApiProblems('not-found', 'invalid-transition')
  async resume(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<BulkOperationView> {
    return bulkOperationView(await this.commands.execute(new ChangeBulkOperation(requireReader(caller), id, 'resume')));
  }
}
