import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import type { Clock } from '../../../../libs/platform/src/clock/clock';
import { ProblemError, problemType } from '../../../../libs/platform/src/http/problem-details.filter';
import { CLOCK } from '../../../../libs/platform/src/runtime/tokens';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller, requireQueue, requireTeam, type Caller } from '../auth/caller';
import { GetJob } from '../jobs/job.commands';
import type { DefinedJob } from '../jobs/jobs.service';
import { parseName, splitAction } from '../names';
import { assertPayloadSize } from '../payload-size';
import { BatchEnqueueBody, EnqueueBody } from './run-dto';
import { runView, type RunView } from './run-view';
import { EnqueueRun, EnqueueRuns, TransitionRun } from './run.commands';
import { GetRun, GetRunEvents } from './run.queries';
import { ReadySignal } from '../workers/ready-signal';

const RUN_ID = /^run_[A-Za-z0-9_-]{1,64}$/;

@Controller('v1')
@UseGuards(AuthGuard)
export class RunsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly ready: ReadySignal,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** 201 for a new run; 200 with the same run when the Idempotency-Key was seen. */
  @Post('jobs/:name/runs')
  async enqueue(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @Body() body: EnqueueBody,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<RunView> {
    const team = requireTeam(caller);
    const job = await this.queries.execute(new GetJob(team, parseName(rawName, 'job name')));
    requireQueue(team, job.definition.queue);
    if (body.runAt !== undefined && body.delaySeconds !== undefined) throw invalid('give runAt or delaySeconds, not both');
    if (idempotencyKey !== undefined && !/^[\x21-\x7e]{1,200}$/.test(idempotencyKey)) throw invalid('Idempotency-Key must be 1-200 visible ASCII characters');
    assertPayloadSize(body.payload);
    const now = this.clock.now();
    const dueAt = body.runAt !== undefined ? new Date(body.runAt) : new Date(now.getTime() + (body.delaySeconds ?? 0) * 1000);
    const { run, created } = await this.commands.execute(new EnqueueRun(team, job, { payload: body.payload, dueAt, ifRunning: body.ifRunning ?? 'queue', ...(idempotencyKey === undefined ? {} : { idempotencyKey }) }));
    if (created) this.ready.notify();
    response.status(created ? 201 : 200);
    return runView(run, now);
  }

  /** POST /v1/runs:batch (the colon is literal): up to 1,000 runs, 200 with each run and whether it was new. */
  @Post('runs\\:batch')
  @HttpCode(200)
  async enqueueBatch(@CurrentCaller() caller: Caller, @Body() body: BatchEnqueueBody): Promise<{ runs: Array<RunView & { created: boolean }> }> {
    const team = requireTeam(caller);
    const now = this.clock.now();
    const jobs = new Map<string, DefinedJob>();
    for (const name of new Set(body.runs.map((r) => r.job))) {
      const job = await this.queries.execute(new GetJob(team, name));
      requireQueue(team, job.definition.queue);
      jobs.set(name, job);
    }
    const items = body.runs.map((item, i) => {
      if (item.runAt !== undefined && item.delaySeconds !== undefined) throw invalid(`runs[${i}]: give runAt or delaySeconds, not both`);
      assertPayloadSize(item.payload);
      const dueAt = item.runAt !== undefined ? new Date(item.runAt) : new Date(now.getTime() + (item.delaySeconds ?? 0) * 1000);
      return { job: jobs.get(item.job)!, request: { payload: item.payload, dueAt, ifRunning: item.ifRunning ?? 'queue', ...(item.idempotencyKey === undefined ? {} : { idempotencyKey: item.idempotencyKey }) } };
    });
    const results = await this.commands.execute(new EnqueueRuns(team, items));
    if (results.some((r) => r.created)) this.ready.notify();
    return { runs: results.map(({ run, created }) => ({ ...runView(run, now), created })) };
  }

  @Get('runs/:id')
  async get(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<RunView> {
    return runView(await this.queries.execute(new GetRun(caller, parseRunId(id))), this.clock.now());
  }

  /** The run's whole history, in order: what an auditor replays. */
  @Get('runs/:id/events')
  async events(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<{ events: unknown[] }> {
    const events = await this.queries.execute(new GetRunEvents(caller, parseRunId(id)));
    return { events: events.map((e) => ({ type: e.type, revision: Number(e.revision), recordedAt: e.recordedAt.toISOString(), data: e.data, metadata: e.metadata })) };
  }

  /** POST /v1/runs/{id}:cancel */
  @Post('runs/:idAction')
  @HttpCode(200)
  async action(@CurrentCaller() caller: Caller, @Param('idAction') idAction: string): Promise<RunView> {
    const { name } = splitAction(idAction, ['cancel']);
    const run = await this.commands.execute(new TransitionRun(requireTeam(caller), parseRunId(name), (now) => ({ type: 'CancelRun', now })));
    return runView(run, this.clock.now());
  }
}

function parseRunId(id: string): string {
  if (!RUN_ID.test(id)) throw new ProblemError(404, problemType('not-found'), 'not found', `run ${id.slice(0, 80)} not found`);
  return id;
}

function invalid(detail: string): ProblemError {
  return new ProblemError(400, problemType('validation-error'), 'validation error', detail);
}
