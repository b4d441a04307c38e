import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { hashToken, newToken, PG_POOL } from '@chronicle/platform';
import { insertToken } from './tokens.sql';
import { requireTeamExists } from './require-team';

export interface IssuedToken<Team extends string | null> {
  /** The only time the token is shown: only its hash is stored. */
  readonly token: string;
  readonly kind: 'team' | 'worker';
  readonly team: Team;
  readonly queues: string[];
}

/**
 * A team's `team` or `worker` token for its queues (which grants the team
 * those queues), or with team null a platform worker token serving every
 * team granted the queues.
 */
export class IssueToken<Team extends string | null = string | null> extends Command<IssuedToken<Team>> {
  constructor(
    readonly kind: 'team' | 'worker',
    readonly team: Team,
    readonly queues: readonly string[],
  ) {
    super();
  }
}

@CommandHandler(IssueToken)
export class IssueTokenHandler implements ICommandHandler<IssueToken> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async execute({ kind, team, queues: requested }: IssueToken): Promise<IssuedToken<string | null>> {
    if (team !== null) await requireTeamExists(this.pool, team);
    const token = newToken(kind);
    const queues = [...new Set(requested)];
    await insertToken(this.pool, hashToken(token), kind, team, queues);
    return { token, kind, team, queues };
  }
}
