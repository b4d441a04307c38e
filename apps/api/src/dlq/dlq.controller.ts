import { ApiPropertyOptional } from '@nestjs/swagger';
import { Controller, Get, HttpCode, Inject, Param, Post, Query, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { Type } from 'class-transformer';
import type { Pool } from 'pg';
import { DomainError } from '../../../../libs/domain/src/domain-error';
import type { RunDeadData } from '../../../../libs/domain/src/run/run-events';
import type { Clock } from '../../../../libs/platform/src/clock/clock';
import { ProblemError, problemType } from '../../../../libs/platform/src/http/problem-details.filter';
import { CLOCK, PG_POOL } from '../../../../libs/platform/src/runtime/tokens';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller, requireTeam, type Caller } from '../auth/caller';
import { NAME_PATTERN, splitAction } from '../names';
import { runView, type RunView } from '../runs/run-view';
import { TransitionRun } from '../runs/run.commands';
import { GetRun, GetRunEvents } from '../runs/run.queries';
import type { PresentRun } from '../runs/runs.service';
import { ReadySignal } from '../workers/ready-signal';
import { attemptHistory, type AttemptView } from './attempt-history';
import { listDeadRuns, type DlqCursor } from './dlq.sql';

class DlqQuery {
  @ApiPropertyOptional()
  @IsOptional() @IsString() @Matches(NAME_PATTERN, { message: 'job must be a job name' })
  job?: string;

  @ApiPropertyOptional()
  @IsOptional() @IsString() @MaxLength(500)
  cursor?: string;

  @ApiPropertyOptional()
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(500)
  limit?: number;
}

interface DeadRunView {
  readonly runId: string;
  readonly job: string;
  readonly attempt: number;
  readonly reason: RunDeadData['reason'];
  readonly lastError: string | null;
  readonly deadAt: string;
}

/** The dead-letter queue: inspect, replay, discard (reference FR-06), each decision an event with its actor. */
@Controller('v1/dlq')
@UseGuards(AuthGuard)
export class DlqController {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly ready: ReadySignal,
  ) {}

  @Get()
  async list(@CurrentCaller() caller: Caller, @Query() query: DlqQuery): Promise<{ items: DeadRunView[]; nextCursor: string | null }> {
    const team = requireTeam(caller);
    const limit = query.limit ?? 50;
    const page = await listDeadRuns(this.pool, team.team, query.job, query.cursor === undefined ? undefined : decodeCursor(query.cursor), limit + 1);
    const items = page.slice(0, limit).map(deadRunView);
    const last = items[items.length - 1];
    return { items, nextCursor: page.length > limit && last !== undefined ? encodeCursor({ deadAt: last.deadAt, runId: last.runId }) : null };
  }

  @Get(':id')
  async show(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<DeadRunView & { attempts: AttemptView[] }> {
    const team = requireTeam(caller);
    const run = await this.queries.execute(new GetRun(team, id));
    if (run.status !== 'dead' || run.discarded) throw new DomainError('not-found', `run ${id} is not in the dead-letter queue`);
    return { ...deadRunView(run), attempts: attemptHistory(await this.queries.execute(new GetRunEvents(team, id))) };
  }

  /** POST /v1/dlq/{id}:replay and :discard */
  @Post(':idAction')
  @HttpCode(200)
  async action(@CurrentCaller() caller: Caller, @Param('idAction') idAction: string): Promise<RunView> {
    const { name: id, action } = splitAction(idAction, ['replay', 'discard']);
    const run = await this.commands.execute(new TransitionRun(requireTeam(caller), id, (now) => (action === 'replay' ? { type: 'ReplayRun', now } : { type: 'DiscardRun', now })));
    if (action === 'replay') this.ready.notify();
    return runView(run, this.clock.now());
  }
}

function deadRunView(run: PresentRun): DeadRunView {
  const death = run.death;
  if (death === null) throw new Error(`run ${run.definition.runId} is dead without a RunDead`);
  return { runId: run.definition.runId, job: run.definition.job, attempt: run.attempt, reason: death.reason, lastError: death.lastError, deadAt: death.deadAt };
}

function encodeCursor(cursor: DlqCursor): string {
  return Buffer.from(JSON.stringify([cursor.deadAt, cursor.runId])).toString('base64url');
}

function decodeCursor(value: string): DlqCursor {
  try {
    const [deadAt, runId] = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof deadAt === 'string' && !Number.isNaN(Date.parse(deadAt)) && typeof runId === 'string') return { deadAt, runId };
  } catch {
    // fall through to the 400
  }
  throw new ProblemError(400, problemType('validation-error'), 'validation error', 'cursor is not one this API returned');
}
