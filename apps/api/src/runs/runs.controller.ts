import { Controller, Get, Headers, HttpCode, Inject, Param, Post, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import { EnqueueRuns, GetJob, GetRun, GetRunEvents } from '@chronicle/commands';
import {
  assertPayloadSize,
  dueTimeOf,
  parseRunId,
  requireQueue,
  requireTeam,
  splitAction,
  type Caller,
  type DefinedJob,
} from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { CompiledBody } from '../http/compiled-body';
import { BatchEnqueueBody, EnqueueBody } from './run-dto';
import { cancelRunCommand, enqueueOneRun } from './run-requests';
import { runView, type RunView } from './run-view';

@Controller('v1')
@UseGuards(AuthGuard)
export class RunsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** 201 for a new run; 200 with the same run when the Idempotency-Key was seen. */
  @Post('jobs/:name/runs')
  async enqueue(
    @CurrentCaller() caller: Caller,
    @Param('name') rawName: string,
    @CompiledBody(EnqueueBody) body: EnqueueBody,
    @Headers('idempotency-key') rawIdempotencyKey: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<RunView> {
    const now = this.clock.now();
    const { run, created } = await enqueueOneRun(
      { commands: this.commands, queries: this.queries },
      caller,
      rawName,
      body,
      rawIdempotencyKey,
      now,
    );
    response.status(created ? 201 : 200);
    return runView(run, now);
  }

  /** POST /v1/runs:batch (the colon is literal): up to 1,000 runs, 200 with each run and whether it was new. */
  @Post('runs\\:batch')
  @HttpCode(200)
  async enqueueBatch(
    @CurrentCaller() caller: Caller,
    @CompiledBody(BatchEnqueueBody) body: BatchEnqueueBody,
  ): Promise<{ runs: Array<RunView & { created: boolean }> }> {
    const team = requireTeam(caller);
    const now = this.clock.now();
    const jobs = new Map<string, DefinedJob>();
    for (const name of new Set(body.runs.map((r) => r.job))) {
      const job = await this.queries.execute(new GetJob(team, name));
      requireQueue(team, job.definition.queue);
      jobs.set(name, job);
    }
    const items = body.runs.map((item, i) => {
      const dueAt = dueTimeOf(item, now, `runs[${i}]: `);
      assertPayloadSize(item.payload);
      return {
        job: jobs.get(item.job)!,
        request: {
          payload: item.payload,
          dueAt,
          ifRunning: item.ifRunning ?? 'queue',
          ...(item.idempotencyKey == null ? {} : { idempotencyKey: item.idempotencyKey }),
        },
      };
    });
    const results = await this.commands.execute(new EnqueueRuns(team, items, 'batch'));
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
    return {
      events: events.map((e) => ({
        type: e.type,
        revision: Number(e.revision),
        recordedAt: e.recordedAt.toISOString(),
        data: e.data,
        metadata: e.metadata,
      })),
    };
  }

  /** POST /v1/runs/{id}:cancel */
  @Post('runs/:idAction')
  @HttpCode(200)
  async action(@CurrentCaller() caller: Caller, @Param('idAction') idAction: string): Promise<RunView> {
    const { name } = splitAction(idAction, ['cancel']);
    return runView(await this.commands.execute(cancelRunCommand(caller, name)), this.clock.now());
  }
}
