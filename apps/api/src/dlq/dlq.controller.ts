import { Controller, Get, HttpCode, Inject, Param, Post, Query, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { GetDeadLetter, ListDeadLetters, type AttemptView } from '@chronicle/commands';
import {
  NAME_PATTERN,
  requireReader,
  requireTeam,
  splitAction,
  type Caller,
  type PresentRun,
  type RunDeadData,
} from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { REST_PAGE } from '../http/page-names';
import { deadLetterCommand } from '../runs/run-requests';
import { runView, type RunView } from '../runs/run-view';

class DlqQuery {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @Matches(NAME_PATTERN, { message: 'job must be a job name' })
  job?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(500)
  cursor?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;
}

interface DeadRunView {
  readonly runId: string;
  readonly job: string;
  readonly attempt: number;
  readonly reason: RunDeadData['reason'];
  readonly lastError: string | null;
  readonly deadAt: string;
}

/** The dead-letter queue: inspect, replay, discard (reference FR-06), each decision an event with its actor. */
@Controller('v1/dlq')
@UseGuards(AuthGuard)
export class DlqController {
  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Get()
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: DlqQuery,
  ): Promise<{ items: DeadRunView[]; nextCursor: string | null }> {
    const page = await this.queries.execute(
      new ListDeadLetters(requireReader(caller), query.job, {
        after: query.cursor,
        size: query.limit,
        names: REST_PAGE,
      }),
    );
    return { items: page.items.map(({ node }) => deadRunView(node)), nextCursor: page.nextCursor };
  }

  @Get(':id')
  async show(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
  ): Promise<DeadRunView & { attempts: AttemptView[] }> {
    const { run, attempts } = await this.queries.execute(new GetDeadLetter(requireTeam(caller), id));
    return { ...deadRunView(run), attempts };
  }

  /** POST /v1/dlq/{id}:replay and :discard */
  @Post(':idAction')
  @HttpCode(200)
  async action(@CurrentCaller() caller: Caller, @Param('idAction') idAction: string): Promise<RunView> {
    const { name: id, action } = splitAction(idAction, ['replay', 'discard']);
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
