import { randomInt } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { DomainError, PresentRun, RunCommand, TraceContext, WorkerCaller } from '@chronicle/domain';
import { type Config, CONFIG, inSpan } from '@chronicle/platform';
import type { LeasedRun } from '@chronicle/worker-sdk';
import { PAYLOAD_STORE, type PayloadStore } from '../payloads/payload-store';
import { type ClaimPick, leasesOf, prepareClaim, withStoredPayloads, type ClaimRequest } from './claim-ready-runs';
import { type AttemptTraceOf, prepareWorkerDecisions, type WorkerDecision } from './decide-for-worker';
import type { RunDecision } from '../unit-of-work/run-batch';
import { RunLog } from '../unit-of-work/run-log';
import { RunMetrics } from '../metrics/run-metrics';
import { type RunServer, RunServers } from '../shards/run-servers';
import { ReadySignal } from './ready-signal';
import { RunClaims } from './run-claims';
import { TeamsServed } from './teams-served';

export interface Completion {
  readonly runId: string;
  readonly fencingToken: number;
  readonly outcome: 'success' | 'failure';
  readonly error: string | null;
  readonly retryable: boolean;
  /** A retryable failure's retry waits this long instead of the job's backoff (RunCommand CompleteRun's). */
  readonly retryAfterSeconds?: number;
  /** The worker's attempt's trace (its span: docs/operations.md, "Traces"), recorded with the run's events. */
  readonly trace?: TraceContext;
}

/** Each lease done with success (the canary worker's answer, and tests'). */
export function successesOf(
  leases: ReadonlyArray<{ readonly runId: string; readonly fencingToken: number }>,
): Completion[] {
  return leases.map((l) => ({
    runId: l.runId,
    fencingToken: l.fencingToken,
    outcome: 'success',
    error: null,
    retryable: false,
  }));
}

/** Per run: its state after the completion, or why it was refused (stale-lease, not-found). */
export type CompletionResult =
  | { readonly runId: string; readonly state: string; readonly retryAt: string | null }
  | { readonly runId: string; readonly refused: DomainError };

/** A claim in a completion's unit of work: by the dispatch policy (one server), or the runs chosen over several. */
interface RidingClaim {
  readonly request: ClaimRequest;
  readonly pick: ClaimPick;
}

/** What a completion call answers: each run's result, and the runs leased for it when it asked for more. */
export interface CompletionAnswer {
  readonly results: CompletionResult[];
  readonly leases: LeasedRun[];
}

/**
 * Completions, one or many in one unit of work (decideForWorker): a stale
 * fencing token refuses that run alone. With `next`, the same call also
 * claims up to `next.max` ready runs for the worker (one claim, no waiting):
 * a worker that finished runs and has slots free gets its next runs in the
 * answer. With one server the claim is in the completions' transaction (one
 * call and one transaction instead of two); with several it follows them,
 * the dispatch policy over every server (RunClaims), as a lease call's.
 */
export class CompleteRuns extends Command<CompletionAnswer> {
  constructor(
    readonly caller: WorkerCaller,
    readonly completions: readonly Completion[],
    readonly next?: ClaimRequest,
  ) {
    super();
  }
}

@CommandHandler(CompleteRuns)
export class CompleteRunsHandler implements ICommandHandler<CompleteRuns> {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly ready: ReadySignal,
    private readonly teamsServed: TeamsServed,
    private readonly servers: RunServers,
    private readonly runLog: RunLog,
    private readonly metrics: RunMetrics,
    @Inject(PAYLOAD_STORE) private readonly payloads: PayloadStore,
    private readonly claims: RunClaims,
  ) {}

  execute(command: CompleteRuns): Promise<CompletionAnswer> {
    // Linked to each attempt that reports (the worker's span for it), as the runs' events record it.
    return inSpan(
      'chronicle.complete',
      { 'chronicle.runs': command.completions.length },
      () => this.complete(command),
      () => command.completions.flatMap((c) => (c.trace === undefined ? [] : [c.trace])),
    );
  }

  private async complete({ caller, completions, next }: CompleteRuns): Promise<CompletionAnswer> {
    const wanted = new Map(completions.map((c) => [c.runId, c]));
    const command = (run: PresentRun, now: Date): RunCommand => {
      const { fencingToken, outcome, error, retryable, retryAfterSeconds } = wanted.get(run.definition.runId)!;
      return {
        type: 'CompleteRun',
        fencingToken,
        outcome,
        error,
        retryable,
        now,
        // The backoff's random draw, in [0, 1): the domain takes it as data.
        draw: randomInt(1_000_000) / 1_000_000,
        ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
      };
    };
    // With one server the claim rides in the completions' transaction. With several the dispatch policy is
    // over all of them (RunClaims): its first round's choice rides in the transactions the completions open
    // on the chosen runs' servers (a server with chosen runs and no completions gets one of its own); where
    // the claim needs the fleet's locks of caps and rates, it follows the completions, as a lease call's.
    const alone = this.servers.all.length === 1;
    const choice = next === undefined || alone ? 'nothing' : await this.claims.choose(caller, next);
    const chosen = typeof choice === 'object' ? choice : undefined;
    const teamsServed = next === undefined || !alone ? 1 : await this.teamsServed.of(caller, next.queues);
    const claimOn = (server: RunServer): RidingClaim | undefined => {
      if (next === undefined) return undefined;
      if (alone) return { request: next, pick: this.config.priorityWeights };
      const runIds = chosen?.byServer.get(server);
      return runIds === undefined ? undefined : { request: { ...next, max: runIds.length }, pick: { runIds } };
    };
    // One unit of work per server the runs are on, or a claim rides on.
    const groups = this.servers.split([...wanted.keys()], (runId) => this.servers.ofRun(runId));
    const riders = alone ? (next === undefined ? [] : this.servers.all) : [...(chosen?.byServer.keys() ?? [])];
    for (const server of riders) if (!groups.some(([s]) => s === server)) groups.push([server, []]);
    const done = await Promise.all(
      groups.map(async ([server, runIds]) => {
        // A server not reached refuses its runs' completions; the other servers' stand.
        const answer = await this.servers.unlessUnavailable(() =>
          this.completeOn(
            server,
            caller,
            runIds,
            command,
            claimOn(server),
            teamsServed,
            (runId) => wanted.get(runId)?.trace,
          ),
        );
        if (answer.ok) return answer.value;
        return {
          decisions: runIds.map((runId) => ({ runId, refused: answer.error })),
          leases: [],
          completed: [],
          leased: [],
          capped: false,
        };
      }),
    ).finally(() => chosen?.release());
    const decisions = done.flatMap((d) => d.decisions);
    const completed = done.flatMap((d) => d.completed);
    const leased = done.flatMap((d) => d.leased);
    const claimed = { leases: done.flatMap((d) => d.leases) };
    this.metrics.countDecisions([...completed, ...leased]);
    this.ready.decided(decisions.flatMap((d) => ('run' in d ? [d.run] : [])));
    const byRun = new Map(decisions.map((d) => [d.runId, d]));
    const results = completions.map(({ runId }): CompletionResult => {
      const decision = byRun.get(runId)!;
      if ('refused' in decision) {
        this.runLog.refused(runId, wanted.get(runId)!.fencingToken, decision.refused);
        return { runId, refused: decision.refused };
      }
      const { run } = decision;
      return { runId, state: run.status, retryAt: run.status === 'retry_wait' ? run.availableAt : null };
    });
    // Over several servers, the rest of the batch as a lease call claims it: all of it where nothing rode,
    // what the ride left short where a chosen run was taken meanwhile or a limit held runs back.
    const rest =
      choice === 'fleet-limits' ||
      (chosen !== undefined && (leased.length < chosen.chosen || chosen.capped || done.some((d) => d.capped)))
        ? next!.max - leased.length
        : 0;
    const overServers = rest <= 0 ? [] : await this.claims.claim(caller, { ...next!, max: rest });
    return { results, leases: [...(await withStoredPayloads(this.payloads, claimed.leases, leased)), ...overServers] };
  }

  /** The completions of runs on one server, in one unit of work there, with a claim riding in it when given. */
  private async completeOn(
    server: RunServer,
    caller: WorkerCaller,
    runIds: readonly string[],
    command: (run: PresentRun, now: Date) => RunCommand,
    riding: RidingClaim | undefined,
    teamsServed: number,
    traceOf: AttemptTraceOf,
  ): Promise<{
    decisions: WorkerDecision[];
    leases: LeasedRun[];
    completed: RunDecision[];
    leased: RunDecision[];
    capped: boolean;
  }> {
    const reserved = riding === undefined ? [] : await server.decisions.reservedRunIds();
    return server.decisions.unitOfWork(async (work) => {
      // Every lock before the first write: the completions' streams, then the claim's candidates.
      const completing = await prepareWorkerDecisions(work.tx, caller, runIds, command, traceOf);
      const claim =
        riding === undefined
          ? undefined
          : await prepareClaim(work.tx, caller, riding.request, riding.pick, teamsServed, reserved);
      if (claim !== undefined) this.ready.noteLimited(claim.limits);
      const [completed, leased] = await work.decide({
        batches: claim === undefined ? [completing.batch] : [completing.batch, claim.batch],
      });
      await claim?.takeTokens((leased ?? []).map((d) => d.after));
      return {
        decisions: completing.answer(completed!),
        leases: leased === undefined ? [] : leasesOf(leased),
        completed: completed!,
        leased: leased ?? [],
        capped: claim?.capped ?? false,
      };
    });
  }
}
