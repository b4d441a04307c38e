import { Body, Controller, Get, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiProperty } from '@nestjs/swagger';
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
} from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';

class CreateTeamBody {
  @ApiProperty()
  @IsString()
  @Matches(TEAM_ID_PATTERN, { message: `id must be ${TEAM_ID_RULE}` })
  id!: string;
}

class QueuesBody {
  @ApiProperty({ type: [String] })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @Matches(NAME_PATTERN, { each: true, message: `each queue must be ${NAME_RULE}` })
  queues!: string[];
}

class IssueTokenBody extends QueuesBody {
  @ApiProperty()
  @IsIn(['team', 'worker'])
  kind!: 'team' | 'worker';
}

class IssuePlatformTokenBody extends QueuesBody {
  @ApiProperty({ description: 'worker: a platform worker token, serving every team granted the queues' })
  @IsIn(['worker'])
  kind!: 'worker';
}

class GrantBody {
  @ApiProperty()
  @IsString()
  @Matches(TEAM_ID_PATTERN, { message: 'team must be a team id' })
  team!: string;

  @ApiProperty({
    required: false,
    description: "the team's share of claims on the queue against weight-1 teams (1-100, default 1)",
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
export class TeamsController {
  constructor(private readonly commands: CommandBus) {}

  @Post()
  async createTeam(
    @CurrentCaller() caller: Caller,
    @Body() body: CreateTeamBody,
    @Res({ passthrough: true }) response: Response,
  ): Promise<{ id: string }> {
    requireAdmin(caller);
    const created = await this.commands.execute(new CreateTeam(body.id));
    response.status(created ? 201 : 200);
    return { id: body.id };
  }

  @Post(':team/tokens')
  @HttpCode(201)
  issueToken(
    @CurrentCaller() caller: Caller,
    @Param('team') team: string,
    @Body() body: IssueTokenBody,
  ): Promise<IssuedToken<string>> {
    requireAdmin(caller);
    return this.commands.execute(new IssueToken(body.kind, team, body.queues));
  }
}

/** Admin only: shared queues (grants to several teams) and platform worker tokens serving them. */
@Controller('v1')
@UseGuards(AuthGuard)
export class QueuesController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post('tokens')
  @HttpCode(201)
  issuePlatformToken(
    @CurrentCaller() caller: Caller,
    @Body() body: IssuePlatformTokenBody,
  ): Promise<IssuedToken<null>> {
    requireAdmin(caller);
    return this.commands.execute(new IssueToken(body.kind, null, body.queues));
  }

  @Post('queues/:queue/grants')
  async grant(
    @CurrentCaller() caller: Caller,
    @Param('queue') queue: string,
    @Body() body: GrantBody,
    @Res({ passthrough: true }) response: Response,
  ): Promise<{ queue: string; grants: QueueGrant[] }> {
    requireAdmin(caller);
    const { created, grants } = await this.commands.execute(
      new GrantQueue(parseName(queue, 'queue'), body.team, body.weight ?? 1),
    );
    response.status(created ? 201 : 200);
    return { queue, grants };
  }

  @Get('queues/:queue/grants')
  async grants(
    @CurrentCaller() caller: Caller,
    @Param('queue') queue: string,
  ): Promise<{ queue: string; grants: QueueGrant[] }> {
    requireAdmin(caller);
    return { queue, grants: await this.queries.execute(new ListGrants(parseName(queue, 'queue'))) };
  }
}
