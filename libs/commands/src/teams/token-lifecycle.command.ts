import { Inject } from '@nestjs/common';
import { Command, CommandHandler, Query, QueryHandler, type ICommandHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { AdminEventType, DomainError, PLATFORM_STREAM, teamStreamId } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { recordAdminChange } from './admin-change';
import { requireTeamExists } from './require-team';
import { listTokens, lockTokenOf, revokeToken, type TokenListing } from './tokens.sql';

/** GET /v1/teams/{team}/tokens (the admin, or the team itself); team null: the platform worker tokens. */
export class ListTokens extends Query<TokenListing[]> {
  constructor(readonly team: string | null) {
    super();
  }
}

/** DELETE /v1/teams/{team}/tokens/{id}: refused from then on (within the API's 5 s cache of callers). */
export class RevokeToken extends Command<TokenListing> {
  constructor(
    readonly team: string | null,
    readonly tokenId: string,
    readonly actor: string,
  ) {
    super();
  }
}

@QueryHandler(ListTokens)
export class ListTokensHandler implements IQueryHandler<ListTokens> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async execute({ team }: ListTokens): Promise<TokenListing[]> {
    if (team !== null) await requireTeamExists(this.pool, team);
    return listTokens(this.pool, team);
  }
}

@CommandHandler(RevokeToken)
export class RevokeTokenHandler implements ICommandHandler<RevokeToken> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
  ) {}

  execute({ team, tokenId, actor }: RevokeToken): Promise<TokenListing> {
    return recordAdminChange(this.eventStore, this.pool, actor, {
      streamId: team === null ? PLATFORM_STREAM : teamStreamId(team),
      decide: async (tx) => {
        const token = await lockTokenOf(tx, team, tokenId);
        if (token === undefined)
          throw new DomainError('not-found', `no token ${tokenId.slice(0, 40)} of ${team ?? 'the platform'}`);
        // Revoked already: nothing changes, nothing recorded.
        if (token.revokedAt !== null) return { event: null, answer: token };
        return {
          event: { type: AdminEventType.TokenRevoked, data: { tokenId, team, kind: token.kind } },
          answer: { ...token, revokedAt: new Date() },
        };
      },
      write: (tx) => revokeToken(tx, tokenId),
    });
  }
}
