import { Body, Controller, Get, Param, Put, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsNumber, IsOptional, IsPositive, Max, Min } from 'class-validator';
import { GetTeamQuotas, SetTeamQuotas } from '@chronicle/commands';
import { effectiveBurst, requireAdmin, type Caller, type TeamQuotas } from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';

/** PUT /v1/teams/{team}/quotas: the whole set; a field left out or null is unlimited. */
class TeamQuotasBody {
  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    description: 'new runs per second, over any window; null: unlimited',
  })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  @Max(1_000_000)
  enqueueRatePerSecond?: number | null;

  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    description: 'runs that may be enqueued at once; needs a rate; null: max(1, ceil(rate))',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  enqueueBurst?: number | null;

  // The pending count reads up to this many index entries per enqueue: capped to keep it cheap.
  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    description: 'runs not in a final state (scheduled, ready, retry_wait, leased); null: unlimited',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000)
  maxPendingRuns?: number | null;
}

interface TeamQuotasView extends TeamQuotas {
  readonly team: string;
}

/** Admin only: a team's enqueue quotas (README "Quotas"). No quotas: unlimited. */
@Controller('v1/teams')
@UseGuards(AuthGuard)
export class TeamQuotasController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Get(':team/quotas')
  async get(@CurrentCaller() caller: Caller, @Param('team') team: string): Promise<TeamQuotasView> {
    requireAdmin(caller);
    return view(team, await this.queries.execute(new GetTeamQuotas(team)));
  }

  @Put(':team/quotas')
  async put(
    @CurrentCaller() caller: Caller,
    @Param('team') team: string,
    @Body() body: TeamQuotasBody,
  ): Promise<TeamQuotasView> {
    requireAdmin(caller);
    const quotas: TeamQuotas = {
      enqueueRatePerSecond: body.enqueueRatePerSecond ?? null,
      enqueueBurst: body.enqueueBurst ?? null,
      maxPendingRuns: body.maxPendingRuns ?? null,
    };
    return view(team, await this.commands.execute(new SetTeamQuotas(team, quotas)));
  }
}

/** The burst as it applies: a rate without a burst shows its default. */
function view(team: string, quotas: TeamQuotas): TeamQuotasView {
  return {
    team,
    enqueueRatePerSecond: quotas.enqueueRatePerSecond,
    enqueueBurst: effectiveBurst(quotas),
    maxPendingRuns: quotas.maxPendingRuns,
  };
}
