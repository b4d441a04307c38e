import { Inject } from '@nestjs/common';
import { Command, CommandHandler, Query, QueryHandler, type ICommandHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { PG_POOL } from '@chronicle/platform';
import { requireTeamExists } from './require-team';
import { findGrants, upsertGrant, type QueueGrant } from './tokens.sql';

/** POST /v1/queues/{queue}/grants (admin): share a queue with a team, or change its weight. */
export class GrantQueue extends Command<{ created: boolean; grants: QueueGrant[] }> {
  constructor(
    readonly queue: string,
    readonly team: string,
    readonly weight: number,
  ) {
    super();
  }
}

/** GET /v1/queues/{queue}/grants (admin): the teams a queue serves. */
export class ListGrants extends Query<QueueGrant[]> {
  constructor(readonly queue: string) {
    super();
  }
}

@CommandHandler(GrantQueue)
export class GrantQueueHandler implements ICommandHandler<GrantQueue> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async execute({ queue, team, weight }: GrantQueue): Promise<{ created: boolean; grants: QueueGrant[] }> {
    await requireTeamExists(this.pool, team);
    const created = await upsertGrant(this.pool, queue, team, weight);
    return { created, grants: await findGrants(this.pool, queue) };
  }
}

@QueryHandler(ListGrants)
export class ListGrantsHandler implements IQueryHandler<ListGrants> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  execute({ queue }: ListGrants): Promise<QueueGrant[]> {
    return findGrants(this.pool, queue);
  }
}
