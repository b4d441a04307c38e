import type { OnModuleDestroy } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { WorkerCaller } from '@chronicle/domain';
import type { Relay } from '@chronicle/platform';
import type { LeasedRun } from '@chronicle/worker-sdk';
import { RunServers } from '../shards/run-servers';
import type { ClaimRequest } from './claim-ready-runs';
import { nextAvailableAt, nextRateTokenAt } from './claim-ready-runs.sql';
import { ReadySignal, TOKEN, type Wanting } from './ready-signal';
import { RunClaims } from './run-claims';

/** POST /v1/lease: up to `max` runs of the worker's queues, waiting up to `waitSeconds` for work. */
export class LeaseRuns extends Command<LeasedRun[]> {
  constructor(
    readonly caller: WorkerCaller,
    readonly request: ClaimRequest & { readonly waitSeconds: number },
    /** Aborted when the worker has gone (its connection closed): the wait ends and nothing more is claimed for it. */
    readonly gone?: AbortSignal,
    /** The process's own worker (the canaries'): not among the open polls of workers. */
    readonly builtIn = false,
  ) {
    super();
  }
}

/**
 * Without a wake-up, a waiting lease request looks again this often: a safety net only. Runs made ready
 * here, by another API process or by a scheduler wake it at once (ReadySignal, ReadyBroadcast), and runs
 * that become due by time passing at their due time; each look is a claim, so every idle worker's poll
 * costs the database this many claims a second.
 */
const FALLBACK_POLL_MS = 1_000;
/**
 * How long a lease call, even one that does not wait, comes back for runs that were ready but whose
 * locks another transaction held at that instant (a completion, another claim, the projector writing
 * the run's row): such a run is usually free again within milliseconds.
 */
const LOCKED_READY_GRACE_MS = 250;
/** Between those tries. */
const LOCKED_READY_RETRY_MS = 20;

@CommandHandler(LeaseRuns)
export class LeaseRunsHandler implements ICommandHandler<LeaseRuns>, OnModuleDestroy {
  /** Aborted when the process stops: waiting polls answer at once, so the HTTP server can close. */
  private readonly stopping = new AbortController();
  private polls = 0;

  constructor(
    private readonly ready: ReadySignal,
    private readonly claims: RunClaims,
    private readonly servers: RunServers,
  ) {}

  /** Claim now; with waitSeconds, wait for work until the deadline (woken by new runs, or at the next due time). */
  async execute({ caller, request, gone, builtIn }: LeaseRuns): Promise<LeasedRun[]> {
    const deadline = Date.now() + request.waitSeconds * 1000;
    const stop = gone === undefined ? this.stopping.signal : AbortSignal.any([gone, this.stopping.signal]);
    const counted = builtIn ? 0 : 1;
    this.polls += counted;
    try {
      return await this.poll(caller, request, deadline, stop);
    } finally {
      this.polls -= counted;
    }
  }

  /** Workers' lease calls of this process still claiming or waiting (a gauge for operators, and for tests). */
  get openPolls(): number {
    return this.polls;
  }

  private async poll(
    caller: WorkerCaller,
    request: LeaseRuns['request'],
    deadline: number,
    stop: AbortSignal,
  ): Promise<LeasedRun[]> {
    const grace = Date.now() + LOCKED_READY_GRACE_MS;
    const wanting = { queues: request.queues, team: caller.team };
    // What this poll alone was woken for, a place freed (ReadySignal.decided) or a rate's token (wakeOneAt):
    // passed on to the next waiter for it when this poll cannot try for it (its claim failed, or the worker
    // went away).
    let relay: Relay<Wanting> | undefined;
    // This call's last look at the rate buckets of its queues found none empty: in the grace, whose tries come
    // every few milliseconds for runs another transaction holds a moment, the buckets are not asked again.
    let bucketsFull = false;
    const untilNextToken = async (inGrace: boolean): Promise<number | undefined> => {
      if (inGrace && bucketsFull) return undefined;
      const token = await this.untilNextToken(request.queues);
      bucketsFull = token === undefined;
      return token;
    };
    try {
      while (!stop.aborted) {
        const leases = await this.claims.claim(caller, request);
        const woken = relay;
        relay = undefined;
        if (leases.length > 0) {
          // Woken alone for a rate's token, and leased: the next token wakes the next waiter.
          if (woken?.reason === TOKEN) await this.wakeForNextToken(request.queues, wanting);
          return leases;
        }
        const left = deadline - Date.now();
        if (left <= 0 && Date.now() >= grace) return leases;
        const next = await this.nextAvailableAt(request.queues, caller.team);
        // A run within the worker's prefetch window is leased already: the timer is for the window's edge.
        const untilNext = next === null ? Infinity : next.getTime() - (request.prefetchMs ?? 0) - Date.now();
        const inGrace = Date.now() < grace;
        if (left <= 0) {
          // Past its wait: once more only if runs are ready that this claim could not lock, or a rate's next
          // token comes within the grace.
          if (untilNext > 0) return leases;
          const retry = (await untilNextToken(true)) ?? LOCKED_READY_RETRY_MS;
          if (retry > grace - Date.now()) return leases;
          relay = await this.ready.wait(retry, stop, wanting);
          continue;
        }
        // Runs ready that the claim did not take: held back by a rate (an empty bucket: its next token wakes one
        // of the process's waiters for these queues, ReadySignal.wakeOneAt), locked by another transaction a
        // moment (tried again shortly, within the grace), or held back by a limit (a job's concurrency, a key's),
        // which only a run that ends lifts: that wakes this wait (ReadySignal.decided), and the poll does not
        // spin meanwhile. The rate first: a poll that tried again every few milliseconds of its grace while the
        // bucket was empty made a dozen claims a lease call for nothing.
        const heldBack = untilNext <= 0;
        const token = heldBack ? await untilNextToken(inGrace) : undefined;
        if (token !== undefined) this.ready.wakeOneAt(Date.now() + token, wanting);
        const wait = !heldBack ? untilNext : token !== undefined || !inGrace ? FALLBACK_POLL_MS : LOCKED_READY_RETRY_MS;
        relay = await this.ready.wait(Math.min(left, FALLBACK_POLL_MS, wait), stop, wanting);
      }
      return [];
    } finally {
      this.ready.pass(relay);
    }
  }

  onModuleDestroy(): void {
    this.stopping.abort();
  }

  /** Milliseconds until an empty rate bucket of these queues has a token again, over every server; none empty: undefined. */
  private async untilNextToken(queues: readonly string[]): Promise<number | undefined> {
    const answers = await Promise.all(
      this.servers.all.map((s) => this.servers.unlessUnavailable(() => nextRateTokenAt(s.pool, queues))),
    );
    const times = answers.flatMap((a) => (a.ok && a.value !== null ? [a.value.getTime()] : []));
    return times.length === 0 ? undefined : Math.max(1, Math.min(...times) - Date.now());
  }

  /** The next waiter for these queues woken at the next token, or now where the buckets have tokens left. */
  private async wakeForNextToken(queues: readonly string[], wanting: Wanting): Promise<void> {
    this.ready.wakeOneAt(Date.now() + ((await this.untilNextToken(queues)) ?? 0), wanting);
  }

  /** The earliest time a waiting run of these queues comes due, over every server that answers. */
  private async nextAvailableAt(queues: readonly string[], team: string | null): Promise<Date | null> {
    const answers = await Promise.all(
      this.servers.all.map((s) => this.servers.unlessUnavailable(() => nextAvailableAt(s.pool, queues, team))),
    );
    const times = answers.flatMap((a) => (a.ok && a.value !== null ? [a.value] : []));
    return times.reduce<Date | null>((first, t) => (first === null || t < first ? t : first), null);
  }
}
