import { ApiProperty } from '@nestjs/swagger';
import { Body, Controller, HttpCode, Inject, Param, Post, Res, UseGuards } from '@nestjs/common';
import { ArrayMaxSize, ArrayNotEmpty, IsArray, IsIn, IsString, Matches } from 'class-validator';
import type { Response } from 'express';
import type { Pool } from 'pg';
import { ProblemError, problemType } from '../../../../libs/platform/src/http/problem-details.filter';
import { hashToken, newToken } from '../../../../libs/platform/src/runtime/admin-token';
import { PG_POOL } from '../../../../libs/platform/src/runtime/tokens';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller, requireAdmin, type Caller } from '../auth/caller';
import { insertTeam, insertToken, teamExists } from '../auth/tokens.sql';
import { NAME_PATTERN } from '../names';

class CreateTeamBody {
  @ApiProperty()
  @IsString() @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/, { message: 'id must be 1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit' })
  id!: string;
}

class IssueTokenBody {
  @ApiProperty()
  @IsIn(['team', 'worker'])
  kind!: 'team' | 'worker';

  @ApiProperty({ type: [String] })
  @IsArray() @ArrayNotEmpty() @ArrayMaxSize(100) @IsString({ each: true }) @Matches(NAME_PATTERN, { each: true, message: 'each queue must be a name of 1-200 characters: letters, digits, . _ -' })
  queues!: string[];
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
    if (!(await teamExists(this.pool, team))) throw new ProblemError(404, problemType('not-found'), 'not found', `team ${team} does not exist`);
    const token = newToken(body.kind);
    const queues = [...new Set(body.queues)];
    await insertToken(this.pool, hashToken(token), body.kind, team, queues);
    // The only time the token is shown: only its hash is stored.
    return { token, kind: body.kind, team, queues };
  }
}
