import { Controller, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiOperation, ApiParam } from '@nestjs/swagger';
import type { Response } from 'express';
import {
  CompleteRuns,
  HeartbeatRuns,
  LeaseRuns,
  type ClaimRequest,
  type Completion,
  type Heartbeat,
} from '@chronicle/commands';
import {
  DEFAULT_LEASE_SECONDS,
  DEFAULT_WORKER_ID,
  requireQueue,
  requireWorker,
  type Caller,
  type DomainError,
  type TraceContext,
  type WorkerCaller,
} from '@chronicle/domain';
import { traceContextOf } from '@chronicle/platform';
import type { LeasedRun } from '@chronicle/worker-sdk';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { CompiledBody } from '../http/compiled-body';
import { domainProblem } from '../http/problem-details.filter';
import { ApiProblems } from '../http/problem-responses';
import {
  CompletionResult,
  CompletionResults,
  HeartbeatResult,
  HeartbeatResults,
  Leases,
  LEASES_EXAMPLE,
} from './worker-answers';
import {
  CompleteBody,
  CompleteManyBody,
  HeartbeatBody,
  HeartbeatManyBody,
  LeaseBody,
  type LeaseNextBody,
} from './worker-dto';

const RUN_ID = ApiParam({ name: 'id', description: 'the run id', example: 'run_8K2' });

/**
 * The worker protocol: lease, heartbeat, complete; every call after the lease carries the fencing token.
 * Its documentation is decorators only, read once when the document is built: these hot endpoints do
 * no more per request than before.
 */
@Controller('v1')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // worker tokens only, for queues they were issued for
export class WorkersController {
  constructor(private readonly commands: CommandBus) {}

  @Post('lease')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'leaseRuns',
    summary: 'Lease up to max ready runs of these queues, long-polling up to waitSeconds (worker)',
  })
  @ApiAnswer(200, Leases, {
    description: 'the runs leased; none if nothing was ready in time',
    example: LEASES_EXAMPLE,
  })
  async lease(
    @CurrentCaller() caller: Caller,
    @CompiledBody(LeaseBody) body: LeaseBody,
    @Res({ passthrough: true }) response: Response,
  ): Promise<{ leases: LeasedRun[] }> {
    const worker = requireWorker(caller);
    // A worker that hangs up (shutdown, timeout) ends its long poll: nothing more is claimed for nobody.
    const gone = new AbortController();
    response.on('close', () => {
      if (!response.writableFinished) gone.abort();
    });
    const leases = await this.commands.execute(
      new LeaseRuns(worker, { ...claimRequest(worker, body), waitSeconds: body.waitSeconds ?? 0 }, gone.signal),
    );
    return { leases };
  }

  /** One heartbeat: a batch of one, its refusal (409 stale-lease, 404) the answer's status. */
  @Post('runs/:id/heartbeat')
  @HttpCode(200)
  @ApiOperation({ operationId: 'heartbeatRun', summary: "Extend a run's lease, with its fencing token (worker)" })
  @RUN_ID
  @ApiAnswer(200, HeartbeatResult, { description: "the lease, extended (never past the job's timeoutSeconds)" })
  @ApiProblems('not-found', 'stale-lease', 'conflict')
  async heartbeat(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @CompiledBody(HeartbeatBody) body: HeartbeatBody,
  ): Promise<{ runId: string; leaseExpiresAt: string | null }> {
    const [result] = await this.commands.execute(new HeartbeatRuns(requireWorker(caller), [heartbeat(id, body)]));
    if ('refused' in result!) throw result.refused;
    return result!;
  }

  /** POST /v1/runs:heartbeat (the colon is literal): up to 100 heartbeats in one transaction; 200 with each run's new expiry or problem. */
  @Post('runs\\:heartbeat')
  @HttpCode(200)
  @ApiOperation({ operationId: 'heartbeatRuns', summary: 'Up to 100 heartbeats in one transaction (worker)' })
  @ApiAnswer(200, HeartbeatResults, { description: 'per heartbeat, its new expiry or its own problem' })
  async heartbeatMany(
    @CurrentCaller() caller: Caller,
    @CompiledBody(HeartbeatManyBody) body: HeartbeatManyBody,
  ): Promise<{ results: Array<{ runId: string; leaseExpiresAt?: string | null; problem?: Record<string, unknown> }> }> {
    const results = await this.commands.execute(
      new HeartbeatRuns(
        requireWorker(caller),
        body.heartbeats.map((h) => heartbeat(h.runId, h)),
      ),
    );
    return {
      results: perRun(results),
    };
  }

  /** One completion: a batch of one, its refusal (409 stale-lease, 404) the answer's status. */
  @Post('runs/:id/complete')
  @HttpCode(200)
  @ApiOperation({ operationId: 'completeRun', summary: 'Report success or failure, with the fencing token (worker)' })
  @RUN_ID
  @ApiAnswer(200, CompletionResult, { description: "the run's state after it" })
  @ApiProblems('not-found', 'stale-lease', 'conflict')
  async complete(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @CompiledBody(CompleteBody) body: CompleteBody,
  ): Promise<{ runId: string; state: string; retryAt: string | null }> {
    const {
      results: [result],
    } = await this.commands.execute(new CompleteRuns(requireWorker(caller), [completion(id, body)]));
    if ('refused' in result!) throw result.refused;
    return result!;
  }

  /**
   * POST /v1/runs:complete (the colon is literal): up to 100 completions in one transaction; 200 with
   * each run's state or problem. With `lease`, the same transaction leases the worker's next runs
   * (`leases` in the answer, as POST /v1/lease gives them, without waiting).
   */
  @Post('runs\\:complete')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'completeRuns',
    summary: 'Up to 100 outcomes in one transaction, and with lease the next runs (worker)',
  })
  @ApiAnswer(200, CompletionResults, {
    description: 'per completion, its result or its own problem; the leases asked for',
  })
  async completeMany(
    @CurrentCaller() caller: Caller,
    @CompiledBody(CompleteManyBody) body: CompleteManyBody,
  ): Promise<{
    results: Array<{ runId: string; state?: string; retryAt?: string | null; problem?: Record<string, unknown> }>;
    leases?: LeasedRun[];
  }> {
    const worker = requireWorker(caller);
    const { results, leases } = await this.commands.execute(
      new CompleteRuns(
        worker,
        body.completions.map((c) => completion(c.runId, c)),
        body.lease == null ? undefined : claimRequest(worker, body.lease),
      ),
    );
    return {
      results: perRun(results),
      ...(body.lease == null ? {} : { leases }),
    };
  }
}

/** A batch's answer per run: the run's result, or the problem that refused that run alone. */
function perRun<Result extends { runId: string }>(
  results: ReadonlyArray<Result | { runId: string; refused: DomainError }>,
): Array<Result | { runId: string; problem: Record<string, unknown> }> {
  return results.map((r) => ('refused' in r ? { runId: r.runId, problem: domainProblem(r.refused) } : r));
}

/** What a worker asks to lease, checked against its token's queues. */
function claimRequest(worker: WorkerCaller, body: LeaseNextBody): ClaimRequest {
  const queues = [...new Set(body.queues)];
  for (const queue of queues) requireQueue(worker, queue);
  return {
    queues,
    max: body.max,
    leaseSeconds: body.leaseSeconds ?? DEFAULT_LEASE_SECONDS,
    workerId: body.workerId ?? DEFAULT_WORKER_ID,
    prefetchMs: body.prefetchMs ?? 0,
  };
}

function heartbeat(runId: string, body: HeartbeatBody): Heartbeat {
  return {
    runId,
    fencingToken: body.fencingToken,
    leaseSeconds: body.leaseSeconds ?? DEFAULT_LEASE_SECONDS,
    ...attemptTrace(body),
  };
}

/** The attempt's trace a heartbeat or completion names, if well formed (a malformed one is left out). */
function attemptTrace(body: { traceparent?: string | null; tracestate?: string | null }): { trace?: TraceContext } {
  const trace = traceContextOf(body.traceparent, body.tracestate);
  return trace === undefined ? {} : { trace };
}

function completion(runId: string, body: CompleteBody): Completion {
  return {
    runId,
    fencingToken: body.fencingToken,
    outcome: body.outcome,
    error: body.error ?? null,
    retryable: body.retryable ?? true,
    ...(body.retryAfterSeconds == null ? {} : { retryAfterSeconds: body.retryAfterSeconds }),
    ...attemptTrace(body),
  };
}
