import { Controller, Delete, Get, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation } from '@nestjs/swagger';
import type { Response } from 'express';
import {
  CreateTeam,
  GrantQueue,
  IssueToken,
  ListGrants,
  ListTokens,
  RevokeToken,
  type IssuedToken,
  type QueueGrant,
  type TokenListing,
} from '@chronicle/commands';
import {
  DomainError,
  NAME_PATTERN,
  NAME_RULE,
  parseName,
  requireAdmin,
  requireAdminOrTeam,
  TEAM_ID_PATTERN,
  TEAM_ID_RULE,
  type Caller,
  actorOf,
} from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { array, dateTime, integer, object, oneOf, text, type Accepted } from '../http/body-schema';
import { CompiledBody } from '../http/compiled-body';
import { ApiProblems } from '../http/problem-responses';
import { IssuedToken as IssuedTokenAnswer, QueueGrants, Team, TokenAnswer, TokenList } from './team-answers';

const CreateTeamBody = object(
  { required: { id: { ...text({ pattern: TEAM_ID_PATTERN, rule: TEAM_ID_RULE }), example: 'billing' } } },
  'CreateTeamBody',
);
type CreateTeamBody = Accepted<typeof CreateTeamBody>;

const QUEUES = {
  ...array(text({ pattern: NAME_PATTERN, rule: NAME_RULE }), { minItems: 1, maxItems: 100 }),
  description: 'the queues it may use: a team token grants its team these queues',
  example: ['billing'],
};

const IssueTokenBody = object(
  {
    required: {
      queues: QUEUES,
      kind: {
        ...oneOf(['team', 'worker']),
        description: 'team: define jobs, enqueue; worker: lease and complete',
      },
    },
    optional: {
      expiresAt: {
        ...dateTime(),
        description: 'refused from this instant on (a future one); without it, until revoked',
      },
    },
  },
  'IssueTokenBody',
);
type IssueTokenBody = Accepted<typeof IssueTokenBody>;

const IssuePlatformTokenBody = object(
  {
    required: {
      queues: QUEUES,
      kind: {
        ...oneOf(['worker']),
        description: 'worker: a platform worker token, serving every team granted the queues',
      },
    },
    optional: {
      expiresAt: { ...dateTime(), description: 'refused from this instant on (a future one)' },
    },
  },
  'IssuePlatformTokenBody',
);
type IssuePlatformTokenBody = Accepted<typeof IssuePlatformTokenBody>;

const GrantBody = object(
  {
    required: {
      team: { ...text({ pattern: TEAM_ID_PATTERN, rule: 'a team id' }), description: 'the team to serve' },
    },
    optional: {
      weight: {
        ...integer(1, 100),
        default: 1,
        description: "the team's share of claims on the queue against weight-1 teams",
      },
    },
  },
  'GrantBody',
);
type GrantBody = Accepted<typeof GrantBody>;

/** Admin only: teams, and the tokens their jobs and workers use. */
@Controller('v1/teams')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // the admin only
export class TeamsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post()
  @ApiOperation({ operationId: 'createTeam', summary: 'Create a team (admin)' })
  @ApiAnswer(201, Team, { description: 'created' })
  @ApiAnswer(200, Team, { description: 'it existed already' })
  async createTeam(
    @CurrentCaller() caller: Caller,
    @CompiledBody(CreateTeamBody) body: CreateTeamBody,
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
    @CompiledBody(IssueTokenBody) body: IssueTokenBody,
  ): Promise<IssuedToken<string>> {
    requireAdmin(caller);
    return this.commands.execute(
      new IssueToken(body.kind, team, body.queues, actorOf(caller), futureInstant(body.expiresAt)),
    );
  }

  @Get(':team/tokens')
  @ApiOperation({
    operationId: 'listTokens',
    summary: "A team's tokens, never the tokens themselves (admin, or the team)",
  })
  @ApiAnswer(200, TokenList, { description: 'its tokens, oldest first, revoked and expired ones included' })
  @ApiProblems('not-found')
  async listTokens(@CurrentCaller() caller: Caller, @Param('team') team: string): Promise<{ tokens: TokenView[] }> {
    requireAdminOrTeam(caller, team);
    return { tokens: (await this.queries.execute(new ListTokens(team))).map(tokenView) };
  }

  @Delete(':team/tokens/:id')
  @ApiOperation({ operationId: 'revokeToken', summary: "Revoke one of a team's tokens (admin, or the team)" })
  @ApiAnswer(200, TokenAnswer, { description: 'the token, revoked: refused everywhere within 5 s' })
  @ApiProblems('not-found')
  async revokeToken(
    @CurrentCaller() caller: Caller,
    @Param('team') team: string,
    @Param('id') id: string,
  ): Promise<TokenView> {
    requireAdminOrTeam(caller, team);
    return tokenView(await this.commands.execute(new RevokeToken(team, id, actorOf(caller))));
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
    @CompiledBody(IssuePlatformTokenBody) body: IssuePlatformTokenBody,
  ): Promise<IssuedToken<null>> {
    requireAdmin(caller);
    return this.commands.execute(
      new IssueToken(body.kind, null, body.queues, actorOf(caller), futureInstant(body.expiresAt)),
    );
  }

  @Get('tokens')
  @ApiOperation({ operationId: 'listPlatformTokens', summary: 'The platform worker tokens (admin)' })
  @ApiAnswer(200, TokenList, { description: 'oldest first, revoked and expired ones included' })
  async listPlatformTokens(@CurrentCaller() caller: Caller): Promise<{ tokens: TokenView[] }> {
    requireAdmin(caller);
    return { tokens: (await this.queries.execute(new ListTokens(null))).map(tokenView) };
  }

  @Delete('tokens/:id')
  @ApiOperation({ operationId: 'revokePlatformToken', summary: 'Revoke a platform worker token (admin)' })
  @ApiAnswer(200, TokenAnswer, { description: 'the token, revoked' })
  @ApiProblems('not-found')
  async revokePlatformToken(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<TokenView> {
    requireAdmin(caller);
    return tokenView(await this.commands.execute(new RevokeToken(null, id, actorOf(caller))));
  }

  @Post('queues/:queue/grants')
  @ApiOperation({ operationId: 'grantQueue', summary: "Grant a queue to a team, or change the grant's weight (admin)" })
  @ApiAnswer(201, QueueGrants, { description: 'granted' })
  @ApiAnswer(200, QueueGrants, { description: 'the grant was there: its weight is set' })
  @ApiProblems('not-found')
  async grant(
    @CurrentCaller() caller: Caller,
    @Param('queue') queue: string,
    @CompiledBody(GrantBody) body: GrantBody,
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

interface TokenView {
  readonly id: string;
  readonly kind: 'team' | 'worker';
  readonly team: string | null;
  readonly queues: string[];
  readonly createdAt: string;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  readonly lastUsedAt: string | null;
}

function tokenView(token: TokenListing): TokenView {
  const iso = (at: Date | null): string | null => at?.toISOString() ?? null;
  return {
    id: token.id,
    kind: token.kind,
    team: token.team,
    queues: token.queues,
    createdAt: token.createdAt.toISOString(),
    expiresAt: iso(token.expiresAt),
    revokedAt: iso(token.revokedAt),
    lastUsedAt: iso(token.lastUsedAt),
  };
}

/** The admin, or the team itself (its own tokens). */
/** An expiry must lie ahead: a token born expired is a mistake. */
function futureInstant(value: string | null | undefined): Date | null {
  if (value == null) return null;
  const at = new Date(value);
  if (at.getTime() <= Date.now())
    throw new DomainError('validation-error', 'expiresAt must be in the future', { field: 'expiresAt' });
  return at;
}
