import { Controller, Get, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiParam } from '@nestjs/swagger';
import { GetDeadLetter, ListDeadLetters, type AttemptView, type UnavailableShards } from '@chronicle/commands';
import {
  NAME_PATTERN,
  parseRunId,
  requireReader,
  type Caller,
  type PresentRun,
  type RunDeadData,
} from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { integer, queryString, text, type Accepted } from '../http/body-schema';
import { CompiledQuery } from '../http/compiled-body';
import { REST_PAGE } from '../http/page-names';
import { ApiProblems } from '../http/problem-responses';
import { Run } from '../runs/run-answers';
import { deadLetterCommand } from '../runs/run-requests';
import { runView, type RunView } from '../runs/run-view';
import { DeadRunDetail, DeadRunPage } from './dlq-answers';

const DlqQuery = queryString({
  job: { ...text({ pattern: NAME_PATTERN, rule: 'a job name' }), description: "only this job's dead runs" },
  cursor: { ...text({ maxLength: 500 }), description: 'the nextCursor of the previous page' },
  limit: { ...integer(1, 500), default: 50 },
});
type DlqQuery = Accepted<typeof DlqQuery>;

interface DeadRunView {
  readonly runId: string;
  readonly job: string;
  readonly attempt: number;
  readonly reason: RunDeadData['reason'];
  readonly lastError: string | null;
  readonly deadAt: string;
}

const RUN_ID = ApiParam({ name: 'id', description: 'the run id', example: 'run_8K2' });

/** The dead-letter queue: inspect, replay, discard (docs/api.md, "REST calls"), each decision an event with its actor. */
@Controller('v1/dlq')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // team tokens only
export class DlqController {
  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Get()
  @ApiOperation({ operationId: 'listDeadLetters', summary: "The team's dead runs, newest first, keyset-paged (team)" })
  @ApiAnswer(200, DeadRunPage, { description: 'a page; pages neither repeat nor skip while runs keep dying' })
  @ApiProblems('validation-error')
  async list(
    @CurrentCaller() caller: Caller,
    @CompiledQuery(DlqQuery) query: DlqQuery,
  ): Promise<{ items: DeadRunView[]; nextCursor: string | null; unavailable?: readonly UnavailableShards[] }> {
    const page = await this.queries.execute(
      new ListDeadLetters(requireReader(caller), query.job, {
        after: query.cursor,
        size: query.limit,
        names: REST_PAGE,
      }),
    );
    return {
      items: page.items.map(({ node }) => deadRunView(node)),
      nextCursor: page.nextCursor,
      ...(page.unavailable === undefined ? {} : { unavailable: page.unavailable }),
    };
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getDeadLetter', summary: 'A dead run with its attempt history (team or admin)' })
  @RUN_ID
  @ApiAnswer(200, DeadRunDetail, { description: 'the dead run' })
  @ApiProblems('not-found')
  async show(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
  ): Promise<DeadRunView & { attempts: AttemptView[] }> {
    const { run, attempts } = await this.queries.execute(new GetDeadLetter(requireReader(caller), parseRunId(id)));
    return { ...deadRunView(run), attempts };
  }

  /** POST /v1/dlq/{id}:replay (the colon is literal), and :discard. */
  @Post(':id\\:replay')
  @HttpCode(200)
  @ApiOperation({ operationId: 'replayDeadLetter', summary: 'Back to ready, with a fresh attempt budget (team)' })
  @RUN_ID
  @ApiAnswer(200, Run, { description: 'the run, ready' })
  @ApiProblems('not-found', 'invalid-transition', 'conflict')
  replay(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<RunView> {
    return this.transition(caller, id, 'replay');
  }

  @Post(':id\\:discard')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'discardDeadLetter',
    summary: 'Out of the DLQ view; its history stays in the log (team)',
  })
  @RUN_ID
  @ApiAnswer(200, Run, { description: 'the run, dead and discarded' })
  @ApiProblems('not-found', 'invalid-transition', 'conflict')
  discard(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<RunView> {
    return this.transition(caller, id, 'discard');
  }

  private async transition(caller: Caller, id: string, action: 'replay' | 'discard'): Promise<RunView> {
    return runView(await this.commands.execute(deadLetterCommand(caller, id, action)), this.clock.now());
  }
}

function deadRunView(run: PresentRun): DeadRunView {
  const death = run.death;
  if (death === null) throw new Error(`run ${run.definition.runId} is dead without a RunDead`);
  return {
    runId: run.definition.runId,
    job: run.definition.job,
    attempt: run.attempt,
    reason: death.reason,
    lastError: death.lastError,
    deadAt: death.deadAt,
  };
}
