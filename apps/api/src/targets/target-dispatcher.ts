import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { hostname } from 'node:os';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import { Counter, type Registry } from 'prom-client';
import { CompleteRuns, HeartbeatRuns, LeaseRuns, ReadySignal, type TargetToCall, targetsOf } from '@chronicle/commands';
import { HTTP_TARGET_QUEUE, type WorkerCaller } from '@chronicle/domain';
import {
  CONFIG,
  type Config,
  inSpan,
  LOGGER,
  type JsonLogger,
  METRICS_REGISTRY,
  PG_POOL,
  traceContextOf,
} from '@chronicle/platform';
import type { LeasedRun } from '@chronicle/worker-sdk';
import { OutboundGuard } from './outbound-guard';
import { callTarget, fatal, type TargetOutcome } from './target-call';

/** A lease request waits this long for the next target run. */
const WAIT_SECONDS = 20;
/** A call's lease: renewed every third of it while the call goes on, so a stopped process's runs come back soon. */
const LEASE_SECONDS = 60;
/** After a failed round (the database away), the next. */
const RETRY_MS = 1000;
/**
 * Until some team has an HTTP-target job, the dispatcher does not poll (each poll is a claim, and every
 * enqueue would wake it): it looks whether one has been defined when runs are made ready, and at least
 * this often.
 */
const IDLE_CHECK_MS = 5000;
/** At a stop, calls under way get this long to answer before they are cut (and their runs retried). */
const STOP_GRACE_MS = 5000;

/**
 * The dispatchers of HTTP-target jobs (docs/api.md, "HTTP-target jobs"), one in each API process: it
 * leases the runs of the reserved queue as a platform worker would, through the same claim (so a
 * job's concurrency, rates, priorities and the teams' round-robin hold), POSTs each to its job's
 * target, and completes it with what the target answered: the job's retry policy does the rest.
 */
@Injectable()
export class TargetDispatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly stop = new AbortController();
  /** Aborted STOP_GRACE_MS after the stop: the calls still under way. */
  private readonly cut = new AbortController();
  private loop: Promise<void> = Promise.resolve();
  private readonly calls = new Set<Promise<void>>();
  private readonly guard: OutboundGuard;
  private readonly answers: Counter<'result'>;
  private readonly log: JsonLogger;
  private readonly caller: WorkerCaller = {
    kind: 'worker',
    team: null,
    queues: [HTTP_TARGET_QUEUE],
    tokenId: 'http-targets',
  };
  private readonly workerId = `http-targets@${hostname()}:${process.pid}`;

  constructor(
    private readonly commands: CommandBus,
    private readonly ready: ReadySignal,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) logger: JsonLogger,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    this.guard = new OutboundGuard(config.httpTargetAllowlist);
    this.log = logger.child('http-targets');
    this.answers = new Counter({
      name: 'chronicle_http_target_calls_total',
      help: 'Calls of HTTP-target jobs, by what came of them: 2xx, 3xx, 4xx, 5xx, timeout, refused or error',
      labelNames: ['result'],
      registers: [registry],
    });
  }

  onApplicationBootstrap(): void {
    if (this.config.httpTargetConcurrency > 0) this.loop = this.run();
  }

  /** Before the lease handler stops (its polls then answer at once, and this loop would spin on them). */
  async onModuleDestroy(): Promise<void> {
    this.stop.abort(new Error('the process is stopping'));
    await this.loop;
    const grace = setTimeout(() => this.cut.abort(new Error('the process is stopping')), STOP_GRACE_MS);
    await Promise.allSettled(this.calls);
    clearTimeout(grace);
  }

  private async run(): Promise<void> {
    const slots = this.config.httpTargetConcurrency;
    let targetsDefined = false;
    while (!this.stop.signal.aborted) {
      try {
        if (!targetsDefined) {
          const looked = Date.now();
          targetsDefined = await anyTeamServed(this.pool);
          if (targetsDefined) continue;
          // Runs made ready (the first target job's first run, on any process) end the wait; a look a second at most.
          await this.ready.wait(IDLE_CHECK_MS, this.stop.signal);
          await sleep(Math.max(0, looked + 1000 - Date.now()), undefined, { signal: this.stop.signal }).catch(
            () => undefined,
          );
          continue;
        }
        if (this.calls.size >= slots) {
          await Promise.race(this.calls);
          continue;
        }
        const leases = await this.commands.execute(
          new LeaseRuns(
            this.caller,
            {
              queues: [HTTP_TARGET_QUEUE],
              max: Math.min(slots - this.calls.size, 100),
              leaseSeconds: LEASE_SECONDS,
              workerId: this.workerId,
              waitSeconds: WAIT_SECONDS,
            },
            this.stop.signal,
            true,
          ),
        );
        if (leases.length === 0) {
          // A poll that answered at once (the process stopping) must not starve the event loop.
          await nextTurn();
          continue;
        }
        const targets = await targetsOf(this.pool, [...new Set(leases.map((l) => l.job))]);
        for (const lease of leases) {
          const call = this.deliver(lease, targets.get(lease.job)).finally(() => this.calls.delete(call));
          this.calls.add(call);
        }
      } catch (err) {
        if (this.stop.signal.aborted) break;
        this.log.warn('a round of HTTP-target leases failed; trying again', { err });
        await sleep(RETRY_MS, undefined, { signal: this.stop.signal }).catch(() => undefined);
      }
    }
  }

  /** One run: its call, its lease kept while the call goes on, its completion. */
  private async deliver(lease: LeasedRun, target: TargetToCall | undefined): Promise<void> {
    const trace = traceContextOf(lease.traceparent, lease.tracestate);
    const { result: _, ...completion } = await inSpan(
      'chronicle.target',
      { 'chronicle.run_id': lease.runId, 'chronicle.job': lease.job, 'chronicle.attempt': lease.attempt },
      () => this.call(lease, target),
      () => (trace === undefined ? [] : [trace]),
    );
    try {
      const [result] = (
        await this.commands.execute(
          new CompleteRuns(this.caller, [{ runId: lease.runId, fencingToken: lease.fencingToken, ...completion }]),
        )
      ).results;
      if (result !== undefined && 'refused' in result)
        this.log.warn('an HTTP-target run was not completed', { runId: lease.runId, refused: result.refused.message });
    } catch (err) {
      // Its lease expires and the reaper retries it: at least once, never lost.
      this.log.warn('an HTTP-target run could not be completed; its lease will expire', { runId: lease.runId, err });
    }
  }

  private async call(lease: LeasedRun, target: TargetToCall | undefined): Promise<TargetOutcome> {
    if (target === undefined) return fatal(`job ${lease.job} no longer has an HTTP target`, 'error');
    if (target.secrets.length === 0) return fatal(`job ${lease.job} has no signing secret`, 'error');
    const lost = new AbortController();
    const signal = AbortSignal.any([
      AbortSignal.timeout(Math.min(target.timeoutSeconds, target.jobTimeoutSeconds) * 1000),
      this.cut.signal,
      lost.signal,
    ]);
    const keeping = this.keepLease(lease, lost, signal);
    try {
      if (lease.notBefore !== undefined)
        await sleep(Math.max(0, Date.parse(lease.notBefore) - Date.now()), undefined, { signal });
      const outcome = await callTarget(
        this.guard,
        {
          url: target.url,
          runId: lease.runId,
          job: lease.job,
          attempt: lease.attempt,
          idempotencyKey: lease.idempotencyKey,
          fencingToken: lease.fencingToken,
          dryRun: lease.dryRun,
          payload: lease.payload,
          secrets: target.secrets,
          ...(lease.traceparent === undefined ? {} : { traceparent: lease.traceparent }),
          ...(lease.tracestate === undefined ? {} : { tracestate: lease.tracestate }),
        },
        signal,
      );
      this.answers.inc({ result: outcome.result });
      return outcome;
    } finally {
      lost.abort();
      await keeping;
    }
  }

  /** Heartbeats every third of the lease until the call ends; a lease lost (a stale token) stops the call. */
  private async keepLease(lease: LeasedRun, lost: AbortController, call: AbortSignal): Promise<void> {
    while (!call.aborted) {
      const beat = await sleep((LEASE_SECONDS * 1000) / 3, true, { signal: call }).catch(() => false);
      if (!beat) return;
      try {
        const [result] = await this.commands.execute(
          new HeartbeatRuns(this.caller, [
            { runId: lease.runId, fencingToken: lease.fencingToken, leaseSeconds: LEASE_SECONDS },
          ]),
        );
        if (result !== undefined && 'refused' in result) {
          lost.abort(new Error(`the run's lease was lost: ${result.refused.message}`));
          return;
        }
      } catch (err) {
        this.log.warn('an HTTP-target call could not renew its lease', { runId: lease.runId, err });
      }
    }
  }
}

/** Whether a team has been granted the dispatchers' queue: its first HTTP-target job does that. */
async function anyTeamServed(pool: Pool): Promise<boolean> {
  const { rowCount } = await pool.query('SELECT 1 FROM queue_grants WHERE queue = $1 LIMIT 1', [HTTP_TARGET_QUEUE]);
  return (rowCount ?? 0) > 0;
}
