import { Controller, Get, HttpCode, Inject, Param, Post, Put, Query, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiParam, ApiQuery } from '@nestjs/swagger';
import type { Response } from 'express';
import { backfillRequests, EnqueueRuns, GetJob, GetJobVersions, type RotatedSecret } from '@chronicle/commands';
import { DomainError, parseName, requireReader, requireTeam, type Caller } from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { dateTime, integer, object, type Accepted } from '../http/body-schema';
import { CompiledBody } from '../http/compiled-body';
import { AS_OF, asOfFields, optionalInstant, type AsOfFields } from '../http/instants';
import { ApiProblems } from '../http/problem-responses';
import { EnqueuedRuns } from '../runs/run-answers';
import { runView, type RunView } from '../runs/run-view';
import { FireTimes, Job, JobVersions, NIGHTLY_EXPORT, NIGHTLY_EXPORT_JOB, SigningSecret } from './job-answers';
import { JobBody } from './job-dto';
import {
  defineJobCommand,
  jobFireTimes,
  PREVIOUS_VALID_SECONDS,
  rotateSigningSecretCommand,
  setJobPausedCommand,
} from './job-requests';
import { jobView, type JobView } from './job-view';

/** The body of :backfill; pause and resume take none. Both instants are needed. */
const BackfillBody = object(
  {
    required: {
      from: { ...dateTime(), description: 'the first fire time to backfill (inclusive)' },
      to: { ...dateTime(), description: 'the last (inclusive), not in the future' },
    },
  },
  'BackfillBody',
);
type BackfillBody = Accepted<typeof BackfillBody>;

/** The body of signing-secret:rotate. */
const RotateBody = object(
  {
    required: {},
    optional: {
      previousValidSeconds: {
        ...integer(0, PREVIOUS_VALID_SECONDS.max),
        default: PREVIOUS_VALID_SECONDS.default,
        description: 'how long the replaced secret still signs the calls beside the new one; 0: not at all',
      },
    },
  },
  'RotateSigningSecretBody',
);
type RotateBody = Accepted<typeof RotateBody>;

const JOB_NAME = ApiParam({ name: 'name', description: 'the job name', example: 'billing.export-invoices' });

@Controller('v1/jobs')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // team tokens only, on queues they were granted
export class JobsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** Create (201) or update (200); the same definition again changes nothing. */
  @Put(':name')
  @ApiOperation({ operationId: 'defineJob', summary: 'Create or update a job definition (team)' })
  @JOB_NAME
  @ApiAnswer(201, Job, { description: 'created, version 1', example: NIGHTLY_EXPORT_JOB })
  @ApiAnswer(200, Job, { description: 'updated (a new version), or the same definition again (no new version)' })
  @ApiProblems('invalid-schedule', 'not-found', 'conflict', 'payload-too-large')
  async put(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @CompiledBody(JobBody, {
      examples: { 'nightly-export': { summary: 'a nightly export', value: NIGHTLY_EXPORT } },
    })
    body: JobBody,
    @Res({ passthrough: true }) response: Response,
  ): Promise<JobView & { signingSecret?: string }> {
    const { job, created, signingSecret } = await this.commands.execute(
      defineJobCommand(caller, rawName, body, this.clock.now()),
    );
    response.status(created ? 201 : 200);
    return signingSecret === undefined ? jobView(job) : { ...jobView(job), signingSecret };
  }

  /** POST /v1/jobs/{name}/signing-secret:rotate: an HTTP-target job's new secret, the old one valid a while. */
  @Post(':name/signing-secret\\:rotate')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'rotateSigningSecret',
    summary: "Rotate an HTTP-target job's signing secret; the old one still signs for previousValidSeconds (team)",
  })
  @JOB_NAME
  @ApiAnswer(200, SigningSecret, { description: 'the new secret, shown this once' })
  @ApiProblems('validation-error', 'not-found')
  async rotateSigningSecret(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @CompiledBody(RotateBody) body: RotateBody,
  ): Promise<RotatedSecret> {
    return this.commands.execute(rotateSigningSecretCommand(caller, rawName, body.previousValidSeconds));
  }

  @Get(':name')
  @ApiOperation({ operationId: 'getJob', summary: 'A job definition, now or as of an instant (team)' })
  @JOB_NAME
  @AS_OF
  @ApiAnswer(200, Job, { description: 'the job', example: NIGHTLY_EXPORT_JOB })
  @ApiProblems('validation-error', 'not-found')
  async get(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @Query('asOf') asOfText?: string,
  ): Promise<JobView | (JobView & AsOfFields)> {
    const name = parseName(rawName, 'job name');
    const asOf = optionalInstant(asOfText, 'asOf');
    const job = await this.queries.execute(new GetJob(requireReader(caller), name, asOf));
    return asOf === undefined ? jobView(job) : { ...jobView(job), ...asOfFields(asOf, job.revision) };
  }

  /** Every version of the job's definition, with who changed what. */
  @Get(':name/versions')
  @ApiOperation({
    operationId: 'getJobVersions',
    summary: "Every version of a job's definition: who defined it, when, and each field it changed (team)",
  })
  @JOB_NAME
  @ApiAnswer(200, JobVersions, { description: 'its versions, oldest first' })
  @ApiProblems('validation-error', 'not-found')
  async versions(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
  ): Promise<{ name: string; versions: unknown[] }> {
    const name = parseName(rawName, 'job name');
    const versions = await this.queries.execute(new GetJobVersions(requireReader(caller), name));
    return { name, versions: versions.map((v) => ({ ...v, definedAt: v.definedAt.toISOString() })) };
  }

  /** The job's next fire times, with its jitter. */
  @Get(':name/preview')
  @ApiOperation({ operationId: 'previewJob', summary: "A job's next fire times, its jitter included (team or admin)" })
  @JOB_NAME
  @ApiQuery({ name: 'count', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 10 } })
  @ApiAnswer(200, FireTimes, { description: 'none for a job without a schedule' })
  @ApiProblems('validation-error', 'not-found')
  async preview(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @Query('count') countText?: string,
  ): Promise<{ fireTimes: string[] }> {
    const count = countText === undefined ? undefined : Number(countText);
    const job = await this.queries.execute(new GetJob(requireReader(caller), parseName(rawName, 'job name')));
    return { fireTimes: jobFireTimes(job, count, this.clock.now()) };
  }

  /** POST /v1/jobs/{name}:pause (the colon is literal: a custom method, as Google's API design guide names them), and :resume. */
  @Post(':name\\:pause')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'pauseJob',
    summary: 'Pause a job: its runs are neither leased nor materialised (team)',
  })
  @JOB_NAME
  @ApiAnswer(200, Job, { description: 'the job, paused' })
  @ApiProblems('validation-error', 'not-found', 'conflict')
  async pause(@CurrentCaller() caller: Caller, @Param('name') rawName: string): Promise<JobView> {
    return this.setPaused(caller, rawName, true);
  }

  @Post(':name\\:resume')
  @HttpCode(200)
  @ApiOperation({ operationId: 'resumeJob', summary: 'Resume a paused job (team)' })
  @JOB_NAME
  @ApiAnswer(200, Job, { description: 'the job, not paused' })
  @ApiProblems('validation-error', 'not-found', 'conflict')
  async resume(@CurrentCaller() caller: Caller, @Param('name') rawName: string): Promise<JobView> {
    return this.setPaused(caller, rawName, false);
  }

  /** POST /v1/jobs/{name}:backfill: the runs of a past range of the job's schedule, at most 1,000. */
  @Post(':name\\:backfill')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'backfillJob',
    summary: "Enqueue the runs of a past range of the job's schedule, at most 1,000; asking twice adds nothing (team)",
  })
  @JOB_NAME
  @ApiAnswer(200, EnqueuedRuns, { description: "the range's runs, new or there already" })
  @ApiProblems('invalid-schedule', 'not-found', 'conflict', 'quota-exceeded')
  async backfill(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @CompiledBody(BackfillBody) body: BackfillBody,
  ): Promise<{ runs: Array<RunView & { created: boolean }> }> {
    const team = requireTeam(caller);
    const name = parseName(rawName, 'job name');
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

  private async setPaused(caller: Caller, rawName: string, paused: boolean): Promise<JobView> {
    return jobView(await this.commands.execute(setJobPausedCommand(caller, rawName, paused)));
  }
}
