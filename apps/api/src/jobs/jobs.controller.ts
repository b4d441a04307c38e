import { Body, Controller, Get, HttpCode, Inject, Param, Post, Put, Query, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsISO8601, IsOptional } from 'class-validator';
import type { Response } from 'express';
import {
  acceptSchedule,
  backfillRequests,
  DefineJob,
  EnqueueRuns,
  GetJob,
  parseSchedule,
  previewFireTimes,
  SetJobPaused,
} from '@chronicle/commands';
import {
  assertPayloadSize,
  DomainError,
  jobDefinition,
  parseName,
  requireQueue,
  requireTeam,
  splitAction,
  type Caller,
  type DefinedJob,
  type JobDefinition,
} from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { runView, type RunView } from '../runs/run-view';
import { JobBody } from './job-dto';

/** The body of :backfill; pause and resume take none. */
class BackfillBody {
  @ApiPropertyOptional()
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  from?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  to?: string;
}

@Controller('v1/jobs')
@UseGuards(AuthGuard)
export class JobsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** Create (201) or update (200); the same definition again changes nothing. */
  @Put(':name')
  async put(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @Body() body: JobBody,
    @Res({ passthrough: true }) response: Response,
  ): Promise<JobView> {
    const team = requireTeam(caller);
    const name = parseName(rawName, 'job name');
    requireQueue(team, body.queue);
    assertPayloadSize(body.payload);
    const schedule =
      body.schedule === undefined
        ? undefined
        : { ...body.schedule, ...acceptSchedule(body.schedule, this.clock.now()) };
    const { job, created } = await this.commands.execute(
      new DefineJob(team, jobDefinition(name, team.team, { ...body, schedule })),
    );
    response.status(created ? 201 : 200);
    return view(job);
  }

  @Get(':name')
  async get(@CurrentCaller() caller: Caller, @Param('name') rawName: string): Promise<JobView> {
    return view(await this.queries.execute(new GetJob(requireTeam(caller), parseName(rawName, 'job name'))));
  }

  /** The job's next fire times, with its jitter. */
  @Get(':name/preview')
  async preview(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @Query('count') countText?: string,
  ): Promise<{ fireTimes: string[] }> {
    const count = countText === undefined ? 10 : Number(countText);
    if (!Number.isInteger(count) || count < 1 || count > 100)
      throw new DomainError('validation-error', 'count must be a whole number from 1 to 100', { field: 'count' });
    const job = await this.queries.execute(new GetJob(requireTeam(caller), parseName(rawName, 'job name')));
    if (job.definition.schedule === null) return { fireTimes: [] };
    return {
      fireTimes: previewFireTimes(parseSchedule(job.definition.schedule), this.clock.now(), count, job.definition.name),
    };
  }

  /** POST /v1/jobs/{name}:pause, :resume and :backfill, the colon form of reference 4.1. */
  @Post(':nameAction')
  @HttpCode(200)
  async action(
    @CurrentCaller() caller: Caller,
    @Param('nameAction') nameAction: string,
    @Body() body: BackfillBody,
  ): Promise<JobView | { runs: Array<RunView & { created: boolean }> }> {
    const { name, action } = splitAction(nameAction, ['pause', 'resume', 'backfill']);
    const team = requireTeam(caller);
    if (action !== 'backfill')
      return view(await this.commands.execute(new SetJobPaused(team, name, action === 'pause')));
    if (body.from === undefined || body.to === undefined)
      throw new DomainError('validation-error', 'a backfill needs from and to');
    const job = await this.queries.execute(new GetJob(team, name));
    if (job.definition.schedule === null) throw new DomainError('validation-error', `job ${name} has no schedule`);
    const now = this.clock.now();
    const requests = backfillRequests(name, job.definition.schedule, new Date(body.from), new Date(body.to), now);
    const results =
      requests.length === 0
        ? []
        : await this.commands.execute(
            new EnqueueRuns(
              team,
              requests.map((request) => ({ job, request })),
              'batch',
            ),
          );
    return { runs: results.map(({ run, created }) => ({ ...runView(run, now), created })) };
  }
}

export interface JobView extends Omit<JobDefinition, 'team'> {
  readonly team: string;
  readonly version: number;
  readonly paused: boolean;
}

function view(job: DefinedJob): JobView {
  return { ...job.definition, version: job.version, paused: job.paused };
}
