import { Controller, Get, Headers, HttpCode, Inject, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiHeader, ApiOperation, ApiParam } from '@nestjs/swagger';
import type { Response } from 'express';
import { EnqueueRuns, GetJob, GetRun, GetRunAsOf, GetRunEvents } from '@chronicle/commands';
import {
  assertPayloadSize,
  dueTimeOf,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_RULE,
  parseRunId,
  requireJobQueue,
  requireTeam,
  type Caller,
  type DefinedJob,
} from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { CompiledBody } from '../http/compiled-body';
import { AS_OF, asOfFields, optionalInstant, type AsOfFields } from '../http/instants';
import { ApiProblems } from '../http/problem-responses';
import { EnqueuedRuns, Run, RunEvents } from './run-answers';
import { BatchEnqueueBody, EnqueueBody } from './run-dto';
import { cancelRunCommand, enqueueOneRun, runKeysOf } from './run-requests';
import { runView, type RunView } from './run-view';

const RUN_ID = ApiParam({ name: 'id', description: 'the run id', example: 'run_8K2' });

/** Enqueueing's refusals; an idempotency key seen before answers the run it made, even over a quota. */
const ENQUEUE_PROBLEMS = ApiProblems(
  'forbidden',
  'not-found',
  'concurrency-limit',
  'duplicate-run',
  'conflict',
  'quota-exceeded',
);

@Controller('v1')
@UseGuards(AuthGuard)
export class RunsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** 201 for a new run; 200 with the same run when the Idempotency-Key was seen, or a run holds the unique key. */
  @Post('jobs/:name/runs')
  @ApiOperation({ operationId: 'enqueueRun', summary: 'Enqueue a run now, at runAt or after delaySeconds (team)' })
  @ApiParam({ name: 'name', description: 'the job name', example: 'billing.export-invoices' })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: `${IDEMPOTENCY_KEY_RULE}: the same key again answers the same run (200)`,
    schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source },
  })
  @ApiAnswer(201, Run, { description: 'enqueued' })
  @ApiAnswer(200, Run, {
    description: 'the run this Idempotency-Key enqueued before, or the run that holds the unique key',
  })
  @ENQUEUE_PROBLEMS
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
  @ApiOperation({ operationId: 'enqueueRuns', summary: 'Enqueue up to 1,000 runs in one call, all or none (team)' })
  @ApiAnswer(200, EnqueuedRuns, { description: 'each run, in the order asked, and whether it was new' })
  @ENQUEUE_PROBLEMS
  async enqueueBatch(
    @CurrentCaller() caller: Caller,
    @CompiledBody(BatchEnqueueBody) body: BatchEnqueueBody,
  ): Promise<{ runs: Array<RunView & { created: boolean }> }> {
    const team = requireTeam(caller);
    const now = this.clock.now();
    const jobs = new Map<string, DefinedJob>();
    for (const name of new Set(body.runs.map((r) => r.job))) {
      const job = await this.queries.execute(new GetJob(team, name));
      requireJobQueue(team, job.definition);
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
          ...runKeysOf(item),
        },
      };
    });
    const results = await this.commands.execute(new EnqueueRuns(team, items, 'batch'));
    return { runs: results.map(({ run, created }) => ({ ...runView(run, now), created })) };
  }

  @Get('runs/:id')
  @ApiOperation({
    operationId: 'getRun',
    summary: 'A run and its state, now or as of an instant (admin, its team, or a worker of its queue)',
  })
  @RUN_ID
  @AS_OF
  @ApiAnswer(200, Run, { description: 'the run' })
  @ApiProblems('validation-error', 'not-found')
  async get(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Query('asOf') asOfText?: string,
  ): Promise<RunView | (RunView & AsOfFields)> {
    const runId = parseRunId(id);
    const asOf = optionalInstant(asOfText, 'asOf');
    if (asOf === undefined) return runView(await this.queries.execute(new GetRun(caller, runId)), this.clock.now());
    const run = await this.queries.execute(new GetRunAsOf(caller, runId, asOf));
    return { ...runView(run, asOf), ...asOfFields(asOf, run.revision) };
  }

  /** The run's whole history, in order: what an auditor replays. */
  @Get('runs/:id/events')
  @ApiOperation({
    operationId: 'getRunEvents',
    summary: "A run's whole history, with who decided each step (as getRun)",
  })
  @RUN_ID
  @ApiAnswer(200, RunEvents, { description: 'its events, oldest first' })
  @ApiProblems('not-found')
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

  /** POST /v1/runs/{id}:cancel (the colon is literal). */
  @Post('runs/:id\\:cancel')
  @HttpCode(200)
  @ApiOperation({ operationId: 'cancelRun', summary: 'Cancel a scheduled, ready or retry_wait run (team)' })
  @RUN_ID
  @ApiAnswer(200, Run, { description: 'the run, cancelled' })
  @ApiProblems('forbidden', 'not-found', 'invalid-transition', 'conflict')
  async cancel(@CurrentCaller() caller: Caller, @Param('id') id: string): Promise<RunView> {
    return runView(await this.commands.execute(cancelRunCommand(caller, id)), this.clock.now());
  }
}
