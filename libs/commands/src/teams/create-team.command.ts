import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { PG_POOL } from '@chronicle/platform';
import { insertTeam } from './tokens.sql';

/** POST /v1/teams (admin): true when the team is new. */
export class CreateTeam extends Command<boolean> {
  constructor(readonly id: string) {
    super();
  }
}

@CommandHandler(CreateTeam)
export class CreateTeamHandler implements ICommandHandler<CreateTeam> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  execute({ id }: CreateTeam): Promise<boolean> {
    return insertTeam(this.pool, id);
  }
}
