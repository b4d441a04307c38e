import { Body, Controller, Get, HttpCode, Inject, Param, Post, Put, Query, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsISO8601, IsOptional } from 'class-validator';
import type { Response } from 'express';
import { backfillRequests, EnqueueRuns, GetJob } from '@chronicle/commands';
import { DomainError, parseName, requireReader, requireTeam, splitAction, type Caller } from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { runView, type RunView } from '../runs/run-view';
import { JobBody } from './job-dto';
import { defineJobCommand, jobFireTimes, setJobPausedCommand } from './job-requests';
import { jobView, type JobView } from './job-view';

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
    const { job, created } = await this.commands.execute(defineJobCommand(caller, rawName, body, this.clock.now()));
    response.status(created ? 201 : 200);
    return jobView(job);
  }

  @Get(':name')
  async get(@CurrentCaller() caller: Caller, @Param('name') rawName: string): Promise<JobView> {
    return jobView(await this.queries.execute(new GetJob(requireReader(caller), parseName(rawName, 'job name'))));
  }

  /** The job's next fire times, with its jitter. */
  @Get(':name/preview')
  async preview(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @Query('count') countText?: string,
  ): Promise<{ fireTimes: string[] }> {
    const count = countText === undefined ? undefined : Number(countText);
    const job = await this.queries.execute(new GetJob(requireTeam(caller), parseName(rawName, 'job name')));
    return { fireTimes: jobFireTimes(job, count, this.clock.now()) };
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
      return jobView(await this.commands.execute(setJobPausedCommand(team, name, action === 'pause')));
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
