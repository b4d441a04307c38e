import { randomInt } from 'node:crypto';
import { Body, Controller, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller, requireQueue, requireWorker, type Caller } from '../auth/caller';
import { LeaseRuns, TransitionRun } from '../runs/run.commands';
import { ReadySignal } from './ready-signal';
import { CompleteBody, HeartbeatBody, LeaseBody } from './worker-dto';
import type { Lease } from './lease.service';

const DEFAULT_LEASE_SECONDS = 30;

/** The worker protocol: lease, heartbeat, complete; every call after the lease carries the fencing token. */
@Controller('v1')
@UseGuards(AuthGuard)
export class WorkersController {
  constructor(
    private readonly commands: CommandBus,
    private readonly ready: ReadySignal,
  ) {}

  @Post('lease')
  @HttpCode(200)
  async lease(@CurrentCaller() caller: Caller, @Body() body: LeaseBody): Promise<{ leases: Lease[] }> {
    const worker = requireWorker(caller);
    const queues = [...new Set(body.queues)];
    for (const queue of queues) requireQueue(worker, queue);
    const leases = await this.commands.execute(new LeaseRuns(worker, {
      queues,
      max: body.max,
      waitSeconds: body.waitSeconds ?? 0,
      leaseSeconds: body.leaseSeconds ?? DEFAULT_LEASE_SECONDS,
      workerId: body.workerId ?? 'anonymous',
    }));
    return { leases };
  }

  @Post('runs/:id/heartbeat')
  @HttpCode(200)
  async heartbeat(@CurrentCaller() caller: Caller, @Param('id') id: string, @Body() body: HeartbeatBody): Promise<{ runId: string; leaseExpiresAt: string | null }> {
    const run = await this.commands.execute(new TransitionRun(requireWorker(caller), id, (now) => ({ type: 'ExtendLease', fencingToken: body.fencingToken, leaseSeconds: body.leaseSeconds ?? DEFAULT_LEASE_SECONDS, now })));
    return { runId: id, leaseExpiresAt: run.lease?.expiresAt ?? null };
  }

  @Post('runs/:id/complete')
  @HttpCode(200)
  async complete(@CurrentCaller() caller: Caller, @Param('id') id: string, @Body() body: CompleteBody): Promise<{ runId: string; state: string; retryAt: string | null }> {
    const run = await this.commands.execute(new TransitionRun(requireWorker(caller), id, (now) => ({
      type: 'CompleteRun',
      fencingToken: body.fencingToken,
      outcome: body.outcome,
      error: body.error ?? null,
      retryable: body.retryable ?? true,
      now,
      // The backoff's random draw, in [0, 1): the domain takes it as data.
      draw: randomInt(1_000_000) / 1_000_000,
    })));
    if (run.status === 'retry_wait') this.ready.notify();
    return { runId: id, state: run.status, retryAt: run.status === 'retry_wait' ? run.availableAt : null };
  }
}
