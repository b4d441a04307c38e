import { Inject } from '@nestjs/common';
import { Command, CommandHandler, Query, QueryHandler, type ICommandHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { AdminEventType, teamStreamId } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { recordAdminChange } from './admin-change';
import { requireTeamExists } from './require-team';
import { findGrants, lockGrant, upsertGrant, type QueueGrant } from './tokens.sql';

/** POST /v1/queues/{queue}/grants (admin): share a queue with a team, or change its weight. */
export class GrantQueue extends Command<{ created: boolean; grants: QueueGrant[] }> {
  constructor(
    readonly queue: string,
    readonly team: string,
    readonly weight: number,
    readonly actor: string,
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
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
  ) {}

  async execute({ queue, team, weight, actor }: GrantQueue): Promise<{ created: boolean; grants: QueueGrant[] }> {
    await requireTeamExists(this.pool, team);
    const created = await recordAdminChange(this.eventStore, this.pool, actor, {
      streamId: teamStreamId(team),
      decide: async (tx) => {
        const before = await lockGrant(tx, queue, team);
        // The same grant again changes nothing, and records nothing.
        if (before !== undefined && before.weight === weight) return { event: null, answer: false };
        return {
          event: { type: AdminEventType.QueueGranted, data: { queue, team, weight } },
          answer: before === undefined,
        };
      },
      write: (tx) => upsertGrant(tx, queue, team, weight).then(() => undefined),
    });
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
