import { Controller, Get, Param, Put, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation } from '@nestjs/swagger';
import { GetTeamQuotas, SetTeamQuotas, type TeamLimits } from '@chronicle/commands';
import { actorOf, effectiveBurst, rateLimit, requireAdmin, requireAdminOrTeam, type Caller } from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { integer, numberAbove, object, type Accepted } from '../http/body-schema';
import { CompiledBody } from '../http/compiled-body';
import { ApiProblems } from '../http/problem-responses';
import { RateBody } from '../jobs/job-dto';
import { TeamQuotas as TeamQuotasAnswer } from '../teams/team-answers';

/** PUT /v1/teams/{team}/quotas: the whole set; a field left out or null is unlimited. */
const TeamQuotasBody = object(
  {
    required: {},
    optional: {
      enqueueRatePerSecond: {
        ...numberAbove(0, 1_000_000),
        description: 'new runs per second, over any window (more than 0); null: unlimited',
      },
      enqueueBurst: {
        ...integer(1, 1_000_000),
        description: 'runs that may be enqueued at once; needs a rate; null: max(1, ceil(rate))',
      },
      // The pending count reads up to this many index entries per enqueue: capped to keep it cheap.
      maxPendingRuns: {
        ...integer(1, 100_000),
        description: 'runs not in a final state (scheduled, ready, retry_wait, leased); null: unlimited',
      },
      leaseRate: {
        ...RateBody,
        description:
          "at most this rate of the team's runs leased, every queue and job of the team's together; null: none",
      },
    },
  },
  'TeamQuotasBody',
);
type TeamQuotasBody = Accepted<typeof TeamQuotasBody>;

interface TeamQuotasView extends TeamLimits {
  readonly team: string;
}

/** A team's enqueue quotas (docs/api.md, "Quotas"), set by the admin, read by the team too. No quotas: unlimited. */
@Controller('v1/teams')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // the admin (and for reading, the team itself)
export class TeamQuotasController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Get(':team/quotas')
  @ApiOperation({ operationId: 'getTeamQuotas', summary: "A team's enqueue quotas (admin, or the team's own)" })
  @ApiAnswer(200, TeamQuotasAnswer, { description: 'its quotas; all null: none' })
  @ApiProblems('not-found')
  async get(@CurrentCaller() caller: Caller, @Param('team') team: string): Promise<TeamQuotasView> {
    requireAdminOrTeam(caller, team);
    return view(team, await this.queries.execute(new GetTeamQuotas(team)));
  }

  @Put(':team/quotas')
  @ApiOperation({ operationId: 'setTeamQuotas', summary: "Set a team's enqueue quotas, all of them at once (admin)" })
  @ApiAnswer(200, TeamQuotasAnswer, { description: 'its quotas now' })
  @ApiProblems('not-found')
  async put(
    @CurrentCaller() caller: Caller,
    @Param('team') team: string,
    @CompiledBody(TeamQuotasBody) body: TeamQuotasBody,
  ): Promise<TeamQuotasView> {
    requireAdmin(caller);
    const quotas: TeamLimits = {
      enqueueRatePerSecond: body.enqueueRatePerSecond ?? null,
      enqueueBurst: body.enqueueBurst ?? null,
      maxPendingRuns: body.maxPendingRuns ?? null,
      leaseRate: body.leaseRate == null ? null : rateLimit(body.leaseRate),
    };
    return view(team, await this.commands.execute(new SetTeamQuotas(team, quotas, actorOf(caller))));
  }
}

/** The burst as it applies: a rate without a burst shows its default. */
function view(team: string, quotas: TeamLimits): TeamQuotasView {
  return {
    team,
    enqueueRatePerSecond: quotas.enqueueRatePerSecond,
    enqueueBurst: effectiveBurst(quotas),
    maxPendingRuns: quotas.maxPendingRuns,
    leaseRate: quotas.leaseRate,
  };
}
