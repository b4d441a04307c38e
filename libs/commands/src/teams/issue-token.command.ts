import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { AdminEventType, PLATFORM_STREAM, teamStreamId } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, hashToken, newToken, newTokenId, PG_POOL } from '@chronicle/platform';
import { recordAdminChange } from './admin-change';
import { requireTeamExists } from './require-team';
import { insertToken } from './tokens.sql';

export interface IssuedToken<Team extends string | null> {
  /** The only time the token is shown: only its hash is stored. */
  readonly token: string;
  /** Its public name: events' actors and listings show this, never the token. */
  readonly id: string;
  readonly kind: 'team' | 'worker';
  readonly team: Team;
  readonly queues: string[];
  /** null: it does not expire (until revoked). */
  readonly expiresAt: string | null;
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
    readonly actor: string,
    readonly expiresAt: Date | null = null,
  ) {
    super();
  }
}

@CommandHandler(IssueToken)
export class IssueTokenHandler implements ICommandHandler<IssueToken> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
  ) {}

  async execute({ kind, team, queues: requested, actor, expiresAt }: IssueToken): Promise<IssuedToken<string | null>> {
    if (team !== null) await requireTeamExists(this.pool, team);
    const token = newToken(kind);
    const id = newTokenId();
    const queues = [...new Set(requested)];
    return recordAdminChange(this.eventStore, this.pool, actor, {
      streamId: team === null ? PLATFORM_STREAM : teamStreamId(team),
      // The token itself, and its hash, stay out of the log.
      decide: async () => ({
        event: {
          type: AdminEventType.TokenIssued,
          data: { tokenId: id, kind, team, queues, expiresAt: expiresAt?.toISOString() ?? null },
        },
        answer: { token, id, kind, team, queues, expiresAt: expiresAt?.toISOString() ?? null },
      }),
      write: (tx) => insertToken(tx, hashToken(token), id, kind, team, queues, expiresAt),
    });
  }
}
