import { Inject } from '@nestjs/common';
import { Command, CommandHandler, Query, QueryHandler, type ICommandHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import {
  AdminEventType,
  DomainError,
  effectiveBurst,
  teamStreamId,
  type RateLimit,
  type TeamQuotas,
} from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { recordAdminChange } from '../teams/admin-change';
import { requireTeamExists } from '../teams/require-team';
import { teamQuotasOf } from './admit-enqueue';
import { deleteTeamQuotas, findTeamQuotas, findTeamRate, lockTeamQuotas, upsertTeamQuotas } from './team-quotas.sql';
import { writeRate } from '../runs/rates.sql';

/** A team's enqueue quotas, and its rate of leased runs (docs/api.md, "Rate limits"; null: none). */
export type TeamLimits = TeamQuotas & { readonly leaseRate: RateLimit | null };

/** GET /v1/teams/{team}/quotas (admin). No quotas: unlimited. */
export class GetTeamQuotas extends Query<TeamLimits> {
  constructor(readonly team: string) {
    super();
  }
}

/** PUT /v1/teams/{team}/quotas (admin): the whole set; null is unlimited, all null removes the row. */
export class SetTeamQuotas extends Command<TeamLimits> {
  constructor(
    readonly team: string,
    readonly quotas: TeamLimits,
    readonly actor: string,
  ) {
    super();
  }
}

@QueryHandler(GetTeamQuotas)
export class GetTeamQuotasHandler implements IQueryHandler<GetTeamQuotas> {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async execute({ team }: GetTeamQuotas): Promise<TeamLimits> {
    await requireTeamExists(this.pool, team);
    return { ...teamQuotasOf(await findTeamQuotas(this.pool, team)), leaseRate: await findTeamRate(this.pool, team) };
  }
}

@CommandHandler(SetTeamQuotas)
export class SetTeamQuotasHandler implements ICommandHandler<SetTeamQuotas> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
  ) {}

  async execute({ team, quotas, actor }: SetTeamQuotas): Promise<TeamLimits> {
    if (quotas.enqueueBurst !== null && quotas.enqueueRatePerSecond === null)
      throw new DomainError('validation-error', 'enqueueBurst needs enqueueRatePerSecond', { field: 'enqueueBurst' });
    await requireTeamExists(this.pool, team);
    await recordAdminChange(this.eventStore, this.pool, actor, {
      streamId: teamStreamId(team),
      decide: async (tx) => {
        // Not in the middle of an enqueue of the team: it decided from the old quotas and writes their bucket.
        await lockTeamQuotas(tx, team);
        return { event: { type: AdminEventType.TeamQuotasSet, data: { team, ...quotas } }, answer: undefined };
      },
      write: async (tx) => {
        await writeRate(tx, 'team', team, quotas.leaseRate);
        if (quotas.enqueueRatePerSecond === null && quotas.maxPendingRuns === null) await deleteTeamQuotas(tx, team);
        else
          await upsertTeamQuotas(tx, team, {
            rate: quotas.enqueueRatePerSecond,
            burst: quotas.enqueueBurst,
            effectiveBurst: effectiveBurst(quotas),
            maxPendingRuns: quotas.maxPendingRuns,
          });
      },
    });
    return quotas;
  }
}
