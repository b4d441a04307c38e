import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { AdminEventType, teamStreamId } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { recordAdminChange } from './admin-change';
import { insertTeam, lockTeamId, teamExists } from './tokens.sql';

/** POST /v1/teams (admin): true when the team is new. */
export class CreateTeam extends Command<boolean> {
  constructor(
    readonly id: string,
    readonly actor: string,
  ) {
    super();
  }
}

@CommandHandler(CreateTeam)
export class CreateTeamHandler implements ICommandHandler<CreateTeam> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
  ) {}

  execute({ id, actor }: CreateTeam): Promise<boolean> {
    return recordAdminChange(this.eventStore, this.pool, actor, {
      streamId: teamStreamId(id),
      decide: async (tx) => {
        // Two creations of one team at once: one records it, the other finds it.
        await lockTeamId(tx, id);
        if (await teamExists(tx, id)) return { event: null, answer: false };
        return { event: { type: AdminEventType.TeamCreated, data: { team: id } }, answer: true };
      },
      write: (tx) => insertTeam(tx, id).then(() => undefined),
    });
  }
}
