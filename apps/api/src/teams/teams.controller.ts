import { ApiProperty } from '@nestjs/swagger';
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Res, UseGuards } from '@nestjs/common';
import { ArrayMaxSize, ArrayNotEmpty, IsArray, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import type { Response } from 'express';
import type { Pool } from 'pg';
import { ProblemError, problemType } from '../../../../libs/platform/src/http/problem-details.filter';
import { hashToken, newToken } from '../../../../libs/platform/src/runtime/admin-token';
import { PG_POOL } from '../../../../libs/platform/src/runtime/tokens';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller, requireAdmin, type Caller } from '../auth/caller';
import { findGrants, insertTeam, insertToken, teamExists, upsertGrant, type QueueGrant } from '../auth/tokens.sql';
import { NAME_PATTERN, parseName } from '../names';

const TEAM_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

class CreateTeamBody {
  @ApiProperty()
  @IsString() @Matches(TEAM_ID, { message: 'id must be 1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit' })
  id!: string;
}

class QueuesBody {
  @ApiProperty({ type: [String] })
  @IsArray() @ArrayNotEmpty() @ArrayMaxSize(100) @IsString({ each: true }) @Matches(NAME_PATTERN, { each: true, message: 'each queue must be a name of 1-200 characters: letters, digits, . _ -' })
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
  @IsString() @Matches(TEAM_ID, { message: 'team must be a team id' })
  team!: string;

  @ApiProperty({ required: false, description: 'the team\'s share of claims on the queue against weight-1 teams (1-100, default 1)' })
  @IsOptional() @IsInt() @Min(1) @Max(100)
  weight?: number;
}

/** Admin only: teams, and the tokens their jobs and workers use. */
@Controller('v1/teams')
@UseGuards(AuthGuard)
export class TeamsController {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  @Post()
  async createTeam(@CurrentCaller() caller: Caller, @Body() body: CreateTeamBody, @Res({ passthrough: true }) response: Response): Promise<{ id: string }> {
    requireAdmin(caller);
    const created = await insertTeam(this.pool, body.id);
    response.status(created ? 201 : 200);
    return { id: body.id };
  }

  @Post(':team/tokens')
  @HttpCode(201)
  async issueToken(@CurrentCaller() caller: Caller, @Param('team') team: string, @Body() body: IssueTokenBody): Promise<{ token: string; kind: string; team: string; queues: string[] }> {
    requireAdmin(caller);
    await requireTeamExists(this.pool, team);
    return issue(this.pool, body.kind, team, body.queues);
  }
}

/** Admin only: shared queues (grants to several teams) and platform worker tokens serving them. */
@Controller('v1')
@UseGuards(AuthGuard)
export class QueuesController {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  @Post('tokens')
  @HttpCode(201)
  async issuePlatformToken(@CurrentCaller() caller: Caller, @Body() body: IssuePlatformTokenBody): Promise<{ token: string; kind: string; team: null; queues: string[] }> {
    requireAdmin(caller);
    return issue(this.pool, body.kind, null, body.queues);
  }

  @Post('queues/:queue/grants')
  async grant(@CurrentCaller() caller: Caller, @Param('queue') queue: string, @Body() body: GrantBody, @Res({ passthrough: true }) response: Response): Promise<{ queue: string; grants: QueueGrant[] }> {
    requireAdmin(caller);
    parseName(queue, 'queue');
    await requireTeamExists(this.pool, body.team);
    const created = await upsertGrant(this.pool, queue, body.team, body.weight ?? 1);
    response.status(created ? 201 : 200);
    return { queue, grants: await findGrants(this.pool, queue) };
  }

  @Get('queues/:queue/grants')
  async grants(@CurrentCaller() caller: Caller, @Param('queue') queue: string): Promise<{ queue: string; grants: QueueGrant[] }> {
    requireAdmin(caller);
    return { queue: parseName(queue, 'queue'), grants: await findGrants(this.pool, queue) };
  }
}

async function requireTeamExists(pool: Pool, team: string): Promise<void> {
  if (!(await teamExists(pool, team))) throw new ProblemError(404, problemType('not-found'), 'not found', `team ${team} does not exist`);
}

async function issue<Team extends string | null>(pool: Pool, kind: 'team' | 'worker', team: Team, requested: readonly string[]): Promise<{ token: string; kind: string; team: Team; queues: string[] }> {
  const token = newToken(kind);
  const queues = [...new Set(requested)];
  await insertToken(pool, hashToken(token), kind, team, queues);
  // The only time the token is shown: only its hash is stored.
  return { token, kind, team, queues };
}
