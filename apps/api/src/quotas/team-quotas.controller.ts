import { ApiPropertyOptional } from '@nestjs/swagger';
import { Body, Controller, Get, Inject, Param, Put, UseGuards } from '@nestjs/common';
import { IsInt, IsNumber, IsOptional, IsPositive, Max, Min } from 'class-validator';
import type { Pool } from 'pg';
import { effectiveBurst, type TeamQuotas } from '../../../../libs/domain/src/quota/enqueue-quota';
import { withTransaction } from '../../../../libs/platform/src/database/pg-pool';
import { ProblemError, problemType } from '../../../../libs/platform/src/http/problem-details.filter';
import { PG_POOL } from '../../../../libs/platform/src/runtime/tokens';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller, requireAdmin, type Caller } from '../auth/caller';
import { teamExists } from '../auth/tokens.sql';
import { teamQuotasOf } from './enqueue-quota';
import { deleteTeamQuotas, findTeamQuotas, lockTeamQuotas, upsertTeamQuotas } from './team-quotas.sql';

/** PUT /v1/teams/{team}/quotas: the whole set; a field left out or null is unlimited. */
class TeamQuotasBody {
  @ApiPropertyOptional({ type: Number, nullable: true, description: 'new runs per second, over any window; null: unlimited' })
  @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @IsPositive() @Max(1_000_000)
  enqueueRatePerSecond?: number | null;

  @ApiPropertyOptional({ type: Number, nullable: true, description: 'runs that may be enqueued at once; needs a rate; null: max(1, ceil(rate))' })
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000)
  enqueueBurst?: number | null;

  // The pending count reads up to this many index entries per enqueue: capped to keep it cheap.
  @ApiPropertyOptional({ type: Number, nullable: true, description: 'runs not in a final state (scheduled, ready, retry_wait, leased); null: unlimited' })
  @IsOptional() @IsInt() @Min(1) @Max(100_000)
  maxPendingRuns?: number | null;
}

interface TeamQuotasView extends TeamQuotas {
  readonly team: string;
}

/** Admin only: a team's enqueue quotas (README "Quotas"). No quotas: unlimited. */
@Controller('v1/teams')
@UseGuards(AuthGuard)
export class TeamQuotasController {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  @Get(':team/quotas')
  async get(@CurrentCaller() caller: Caller, @Param('team') team: string): Promise<TeamQuotasView> {
    requireAdmin(caller);
    await this.requireExistingTeam(team);
    return view(team, teamQuotasOf(await findTeamQuotas(this.pool, team)));
  }

  @Put(':team/quotas')
  async put(@CurrentCaller() caller: Caller, @Param('team') team: string, @Body() body: TeamQuotasBody): Promise<TeamQuotasView> {
    requireAdmin(caller);
    const quotas: TeamQuotas = { enqueueRatePerSecond: body.enqueueRatePerSecond ?? null, enqueueBurst: body.enqueueBurst ?? null, maxPendingRuns: body.maxPendingRuns ?? null };
    if (quotas.enqueueBurst !== null && quotas.enqueueRatePerSecond === null) {
      throw new ProblemError(400, problemType('validation-error'), 'validation error', 'enqueueBurst needs enqueueRatePerSecond', { field: 'enqueueBurst' });
    }
    await this.requireExistingTeam(team);
    await withTransaction(this.pool, async (tx) => {
      // Not in the middle of an enqueue of the team: it decided from the old quotas and writes their bucket.
      await lockTeamQuotas(tx, team);
      if (quotas.enqueueRatePerSecond === null && quotas.maxPendingRuns === null) await deleteTeamQuotas(tx, team);
      else await upsertTeamQuotas(tx, team, { rate: quotas.enqueueRatePerSecond, burst: quotas.enqueueBurst, effectiveBurst: effectiveBurst(quotas), maxPendingRuns: quotas.maxPendingRuns });
    });
    return view(team, quotas);
  }

  private async requireExistingTeam(team: string): Promise<void> {
    if (!(await teamExists(this.pool, team))) throw new ProblemError(404, problemType('not-found'), 'not found', `team ${team.slice(0, 80)} does not exist`);
  }
}

/** The burst as it applies: a rate without a burst shows its default. */
function view(team: string, quotas: TeamQuotas): TeamQuotasView {
  return { team, enqueueRatePerSecond: quotas.enqueueRatePerSecond, enqueueBurst: effectiveBurst(quotas), maxPendingRuns: quotas.maxPendingRuns };
}
