import { Body, Controller, Get, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiProperty } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
} from 'class-validator';
import type { Response } from 'express';
import { CreateTeam, GrantQueue, IssueToken, ListGrants, type IssuedToken, type QueueGrant } from '@chronicle/commands';
import {
  NAME_PATTERN,
  NAME_RULE,
  parseName,
  requireAdmin,
  TEAM_ID_PATTERN,
  TEAM_ID_RULE,
  type Caller,
  actorOf,
} from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { ApiProblems } from '../http/problem-responses';
import { IssuedToken as IssuedTokenAnswer, QueueGrants, Team } from './team-answers';

class CreateTeamBody {
  @ApiProperty({ pattern: TEAM_ID_PATTERN.source, description: TEAM_ID_RULE, example: 'billing' })
  @IsString()
  @Matches(TEAM_ID_PATTERN, { message: `id must be ${TEAM_ID_RULE}` })
  id!: string;
}

class QueuesBody {
  @ApiProperty({
    type: 'array',
    items: { type: 'string', pattern: NAME_PATTERN.source },
    minItems: 1,
    maxItems: 100,
    description: 'the queues it may use: a team token grants its team these queues',
    example: ['billing'],
  })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @Matches(NAME_PATTERN, { each: true, message: `each queue must be ${NAME_RULE}` })
  queues!: string[];
}

class IssueTokenBody extends QueuesBody {
  @ApiProperty({ enum: ['team', 'worker'], description: 'team: define jobs, enqueue; worker: lease and complete' })
  @IsIn(['team', 'worker'])
  kind!: 'team' | 'worker';
}

class IssuePlatformTokenBody extends QueuesBody {
  @ApiProperty({
    enum: ['worker'],
    description: 'worker: a platform worker token, serving every team granted the queues',
  })
  @IsIn(['worker'])
  kind!: 'worker';
}

class GrantBody {
  @ApiProperty({ pattern: TEAM_ID_PATTERN.source, description: 'the team to serve' })
  @IsString()
  @Matches(TEAM_ID_PATTERN, { message: 'team must be a team id' })
  team!: string;

  @ApiProperty({
    required: false,
    type: 'integer',
    minimum: 1,
    maximum: 100,
    default: 1,
    description: "the team's share of claims on the queue against weight-1 teams",
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  weight?: number;
}

/** Admin only: teams, and the tokens their jobs and workers use. */
@Controller('v1/teams')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // the admin only
export class TeamsController {
  constructor(private readonly commands: CommandBus) {}

  @Post()
  @ApiOperation({ operationId: 'createTeam', summary: 'Create a team (admin)' })
  @ApiAnswer(201, Team, { description: 'created' })
  @ApiAnswer(200, Team, { description: 'it existed already' })
  async createTeam(
    @CurrentCaller() caller: Caller,
    @Body() body: CreateTeamBody,
    @Res({ passthrough: true }) response: Response,
  ): Promise<{ id: string }> {
    requireAdmin(caller);
    const created = await this.commands.execute(new CreateTeam(body.id, actorOf(caller)));
    response.status(created ? 201 : 200);
    return { id: body.id };
  }

  @Post(':team/tokens')
  @HttpCode(201)
  @ApiOperation({ operationId: 'issueToken', summary: "Issue a team or worker token for a team's queues (admin)" })
  @ApiAnswer(201, IssuedTokenAnswer, { description: 'the token, shown this once' })
  @ApiProblems('not-found')
  issueToken(
    @CurrentCaller() caller: Caller,
    @Param('team') team: string,
    @Body() body: IssueTokenBody,
  ): Promise<IssuedToken<string>> {
    requireAdmin(caller);
    return this.commands.execute(new IssueToken(body.kind, team, body.queues, actorOf(caller)));
  }
}

/** Admin only: shared queues (grants to several teams) and platform worker tokens serving them. */
@Controller('v1')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // the admin only
export class QueuesController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post('tokens')
  @HttpCode(201)
  @ApiOperation({
    operationId: 'issuePlatformToken',
    summary: 'Issue a platform worker token, serving every team granted its queues (admin)',
  })
  @ApiAnswer(201, IssuedTokenAnswer, { description: 'the token, shown this once' })
  issuePlatformToken(
    @CurrentCaller() caller: Caller,
    @Body() body: IssuePlatformTokenBody,
  ): Promise<IssuedToken<null>> {
    requireAdmin(caller);
    return this.commands.execute(new IssueToken(body.kind, null, body.queues, actorOf(caller)));
  }

  @Post('queues/:queue/grants')
  @ApiOperation({ operationId: 'grantQueue', summary: "Grant a queue to a team, or change the grant's weight (admin)" })
  @ApiAnswer(201, QueueGrants, { description: 'granted' })
  @ApiAnswer(200, QueueGrants, { description: 'the grant was there: its weight is set' })
  @ApiProblems('not-found')
  async grant(
    @CurrentCaller() caller: Caller,
    @Param('queue') queue: string,
    @Body() body: GrantBody,
    @Res({ passthrough: true }) response: Response,
  ): Promise<{ queue: string; grants: QueueGrant[] }> {
    requireAdmin(caller);
    const { created, grants } = await this.commands.execute(
      new GrantQueue(parseName(queue, 'queue'), body.team, body.weight ?? 1, actorOf(caller)),
    );
    response.status(created ? 201 : 200);
    return { queue, grants };
  }

  @Get('queues/:queue/grants')
  @ApiOperation({ operationId: 'listQueueGrants', summary: 'The teams a queue serves (admin)' })
  @ApiAnswer(200, QueueGrants, { description: 'its grants' })
  @ApiProblems('validation-error')
  async grants(
    @CurrentCaller() caller: Caller,
    @Param('queue') queue: string,
  ): Promise<{ queue: string; grants: QueueGrant[] }> {
    requireAdmin(caller);
    return { queue, grants: await this.queries.execute(new ListGrants(parseName(queue, 'queue'))) };
  }
}
