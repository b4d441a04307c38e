import { Inject, Injectable } from '@nestjs/common';
import type { WorkerCaller } from '@chronicle/domain';
import { type Config, CONFIG, inSpan, withTransaction } from '@chronicle/platform';
import type { LeasedRun } from '@chronicle/worker-sdk';
import { RunMetrics } from '../metrics/run-metrics';
import { PAYLOAD_STORE, type PayloadStore } from '../payloads/payload-store';
import { countLeasedByQueue, lockFleetQueueCaps } from '../queues/queue-limits.sql';
import { lockAndCountLimits, takeRateTokens } from '../runs/job-limits.sql';
import { type RunServer, RunServers } from '../shards/run-servers';
import type { RunDecision } from '../unit-of-work/run-batch';
import {
  type ClaimCandidateRow,
  findClaimCandidates,
  findQueueSettings,
  type QueueGrantRow,
} from './claim-candidates.sql';
import { claimReadyRuns, withStoredPayloads, type ClaimRequest } from './claim-ready-runs';
import { type ClaimScope, takeWithinRooms } from './claim-ready-runs.sql';
import { CANDIDATES_READ_AHEAD, CandidateBuffer } from './candidate-buffer';
import { chooseRuns } from './choose-runs';
import { ReadySignal } from './ready-signal';
import { TeamsServed } from './teams-served';

/** A claim's first round over several servers, chosen for its caller to claim (RunClaims.choose). */
export type ClaimChoice =
  | 'nothing'
  | 'fleet-limits'
  | {
      readonly byServer: ReadonlyMap<RunServer, string[]>;
      readonly chosen: number;
      readonly capped: boolean;
      release(): void;
    };

/** Claims per call at most: the first, and two more to fill in behind concurrency-limited jobs. */
const MAX_CLAIM_ROUNDS = 3;

/**
 * A worker's claim, without waiting: the lease call's (LeaseRunsHandler, which waits around it), and,
 * with several servers, that of a completion asking for the worker's next runs (CompleteRunsHandler:
 * with one server that claim rides in the completion's own transaction).
 */
@Injectable()
export class RunClaims {
  /** Which server a claim over several takes a team's runs from first: the next at each round (chooseRuns). */
  private turns = 0;
  /**
   * The runs this process's claims over several servers chose and are claiming now: the others' choices
   * leave them out, so that calls at once do not all choose the same oldest runs and find them taken.
   */
  private readonly claiming = new Set<string>();
  /** Candidates read from each server and not chosen yet, for the next calls of the same scope. */
  private readonly kept = new CandidateBuffer<ClaimCandidateRow>();

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly teamsServed: TeamsServed,
    private readonly servers: RunServers,
    private readonly metrics: RunMetrics,
    @Inject(PAYLOAD_STORE) private readonly payloads: PayloadStore,
    private readonly ready: ReadySignal,
  ) {}

  /**
   * Up to `max` runs by the dispatch policy. With one server (the database alone, without a shard map)
   * one claim, one statement (claimOn). With several, the policy over all of their ready runs at once
   * (claimOverServers): a batch filled from one server first would hold its shares on that server only.
   */
  claim(caller: WorkerCaller, request: ClaimRequest): Promise<LeasedRun[]> {
    return inSpan(
      'chronicle.claim',
      { 'chronicle.queues': request.queues, 'chronicle.max': request.max },
      async (span) => {
        const teamsServed = await this.teamsServed.of(caller, request.queues);
        const servers = this.servers.all;
        const leases =
          servers.length === 1
            ? await this.claimOn(servers[0]!, caller, request, teamsServed)
            : await this.claimOverServers(servers, caller, request, teamsServed);
        span?.setAttribute('chronicle.leased', leases.length);
        return leases;
      },
    );
  }

  /**
   * Claims on one server, in one transaction each, until the batch is full. A claim that had to leave runs
   * of a concurrency-limited job behind (its headroom was smaller than its runs among the candidates)
   * may come back short: another claim, which sees that job at its limit, fills the batch with other
   * jobs' runs. Runs whose rows lag what this process appended are left out (RunReservations).
   */
  private async claimOn(
    server: RunServer,
    caller: WorkerCaller,
    request: ClaimRequest,
    teamsServed: number,
  ): Promise<LeasedRun[]> {
    const leases: LeasedRun[] = [];
    await this.servers.unlessUnavailable(async () => {
      const reserved = await server.decisions.reservedRunIds();
      for (let round = 0; round < MAX_CLAIM_ROUNDS && leases.length < request.max; round++) {
        const wanted = { ...request, max: request.max - leases.length };
        const claimed = await this.timedClaim(() =>
          server.decisions.unitOfWork((work) =>
            claimReadyRuns(work, caller, wanted, this.config.priorityWeights, teamsServed, reserved),
          ),
        );
        this.metrics.countDecisions(claimed.decided);
        this.ready.noteLimited(claimed.limits);
        leases.push(...(await withStoredPayloads(this.payloads, claimed.leases, claimed.decided)));
        if (!claimed.capped || claimed.leases.length === 0) break;
      }
    });
    return leases;
  }

  /**
   * Claims over several servers (docs/sharding.md, "Lease"), in rounds. A round asks every server that
   * answers for its candidates at once (candidatesOn), chooses the batch among all of them by the
   * dispatch policy (chooseRuns: a team's runs from the servers in a rotating order), and claims the chosen runs on their servers at once (claimChosen). A
   * run another claim locked or took in between is left out; then, or when candidates were capped (see
   * claimOn), another round fills the batch, the runs left out not proposed again.
   */
  private async claimOverServers(
    servers: readonly RunServer[],
    caller: WorkerCaller,
    request: ClaimRequest,
    teamsServed: number,
  ): Promise<LeasedRun[]> {
    const { control, settings, scope } = await this.overServers(servers, caller, request, teamsServed);
    const { grants, caps, rates, teamRates } = settings;
    const kept = keptScope(scope, grants, request.prefetchMs);
    const leftOut: string[] = [];
    const leases: LeasedRun[] = [];
    let asked = servers;
    for (let round = 0; round < MAX_CLAIM_ROUNDS && leases.length < request.max; round++) {
      const limit = request.max - leases.length;
      const skipped = [...leftOut, ...this.claiming];
      const found = await this.candidatesOn(asked, scope, {
        grants,
        limit,
        skipped,
        prefetchMs: request.prefetchMs,
        kept,
      });
      // A server that cannot be reached is passed over for the rest of the call: the others' runs are leased.
      asked = found.map((f) => f.server);
      const chosen = this.chooseAmong(servers, found, limit, kept);
      if (chosen.length === 0) break;
      const claimed = await this.claimWithinCaps(
        control,
        servers,
        { caps, rates, teamRates },
        chosen,
        caller,
        request,
      ).finally(() => {
        for (const run of chosen) this.claiming.delete(run.run_id);
      });
      this.metrics.countDecisions(claimed.decided);
      leases.push(...(await withStoredPayloads(this.payloads, claimed.leases, claimed.decided)));
      const taken = new Set(claimed.leases.map((l) => l.runId));
      leftOut.push(...chosen.flatMap((run) => (taken.has(run.run_id) ? [] : [run.run_id])));
      const capped = claimed.capped || found.some((f) => f.capped);
      if (!capped && taken.size === chosen.length) break;
    }
    return leases;
  }

  /**
   * The first round of a claim over several servers, chosen but not claimed: the runs, by server, for a
   * caller that claims them in transactions it opens on those servers anyway (a completion's, which the
   * claim then rides in: CompleteRunsHandler). `nothing` when no run was chosen; `fleet-limits` when a
   * chosen run's queue or team has a cap or a rate over the fleet, whose locks claimWithinCaps holds around
   * the claims: the caller claims as a lease call does then. The chosen runs are left out of other calls'
   * choices until `release`; `capped`: runs of a limited job were left behind, so a later round may find more.
   */
  async choose(caller: WorkerCaller, request: ClaimRequest): Promise<ClaimChoice> {
    const servers = this.servers.all;
    const teamsServed = await this.teamsServed.of(caller, request.queues);
    const { settings, scope } = await this.overServers(servers, caller, request, teamsServed);
    const { grants, caps, rates, teamRates } = settings;
    const kept = keptScope(scope, grants, request.prefetchMs);
    const found = await this.candidatesOn(servers, scope, {
      grants,
      limit: request.max,
      skipped: [...this.claiming],
      prefetchMs: request.prefetchMs,
      kept,
    });
    const chosen = this.chooseAmong(servers, found, request.max, kept);
    const release = (): void => {
      for (const run of chosen) this.claiming.delete(run.run_id);
    };
    const fleetLimited = chosen.some((run) => caps.has(run.queue) || rates.has(run.queue) || teamRates.has(run.team));
    if (chosen.length === 0 || fleetLimited) {
      release();
      return chosen.length === 0 ? 'nothing' : 'fleet-limits';
    }
    const byServer = new Map(
      this.servers.split(chosen, (run) => run.server).map(([server, runs]) => [server, runs.map((r) => r.run_id)]),
    );
    return { byServer, chosen: chosen.length, capped: found.some((f) => f.capped), release };
  }

  /** What a claim over several servers reads first: the control database's grants, caps and rates, and its scope. */
  private async overServers(
    servers: readonly RunServer[],
    caller: WorkerCaller,
    request: ClaimRequest,
    teamsServed: number,
  ): Promise<{ control: RunServer; settings: Awaited<ReturnType<typeof findQueueSettings>>; scope: ClaimScope }> {
    // The grants and caps are the control database's (always among the servers): the others keep no copy.
    const control = servers.find((s) => s.isControl)!;
    const settings = await findQueueSettings(control.pool, request.queues, caller.team === null);
    this.ready.noteLimited({ limitedJobs: new Set(), cappedQueues: new Set(settings.caps.keys()) });
    return { control, settings, scope: { team: caller.team, queues: request.queues, teamsServed } };
  }

  /**
   * The batch among the servers' candidates by the dispatch policy (chooseRuns: a team's runs from the
   * servers in a rotating order), leaving out those other calls are claiming; the chosen are claiming now,
   * and gone from the candidates kept for the scope.
   */
  private chooseAmong(
    servers: readonly RunServer[],
    found: ReadonlyArray<{ candidates: ReadonlyArray<ClaimCandidateRow & { server: RunServer }> }>,
    limit: number,
    kept: string,
  ): Array<ClaimCandidateRow & { server: RunServer }> {
    const first = this.turns++ % servers.length;
    const turn = (run: { server: RunServer }): number =>
      (servers.indexOf(run.server) - first + servers.length) % servers.length;
    const free = found.flatMap((f) => f.candidates).filter((run) => !this.claiming.has(run.run_id));
    const chosen = chooseRuns(free, this.config.priorityWeights, limit, Math.random, turn);
    for (const run of chosen) this.claiming.add(run.run_id);
    for (const [server, runs] of this.servers.split(chosen, (run) => run.server))
      this.kept.forget(kept, server.name, new Set(runs.map((run) => run.run_id)));
    return chosen;
  }

  /**
   * Each server's candidates, locking nothing, each candidate with its server; the answers of those that
   * answer. A server whose candidates kept for the scope (`kept`, CandidateBuffer) still hold `limit` is not
   * asked; the others are asked at once (findClaimCandidates), for CANDIDATES_READ_AHEAD times `limit`,
   * and what they propose is kept. Its reserved runs are not proposed, nor `skipped` (the runs an earlier
   * round of the call left out, and those other calls are claiming).
   */
  private async candidatesOn(
    servers: readonly RunServer[],
    scope: ClaimScope,
    options: {
      grants: readonly QueueGrantRow[];
      limit: number;
      skipped: readonly string[];
      prefetchMs?: number;
      kept: string;
    },
  ): Promise<
    Array<{ server: RunServer; capped: boolean; candidates: Array<ClaimCandidateRow & { server: RunServer }> }>
  > {
    const { grants, limit, skipped: notThese, prefetchMs = 0, kept } = options;
    const epoch = this.ready.epoch;
    const answers = await Promise.all(
      servers.map((server) =>
        this.servers.unlessUnavailable(async () => {
          const skipped = [...(await server.decisions.reservedRunIds()), ...notThese];
          const excluded = new Set(skipped);
          let found = this.kept.take(kept, server.name, epoch, limit, (id) => excluded.has(id));
          if (found === undefined) {
            const read = { grants, limit: limit * CANDIDATES_READ_AHEAD, skipped, prefetchMs };
            found = await findClaimCandidates(server.pool, scope, read);
            this.kept.keep(kept, server.name, epoch, found);
          }
          return { server, capped: found.capped, candidates: found.candidates.map((run) => ({ ...run, server })) };
        }),
      ),
    );
    return answers.flatMap((a) => (a.ok ? [a.value] : []));
  }

  /**
   * claimChosen for the chosen runs that fit their queues' caps and their queues' and teams' rates over
   * the whole fleet. Such a queue's or team's runs are leased on every server, so its cap and its rate's
   * bucket are kept in the control database: there the claim takes the fleet's lock of each such queue
   * among the chosen (lockFleetQueueCaps), counts the queue's leased runs on every server that answers,
   * takes the buckets' locks and counts their tokens (`fleet-queue:<queue>`, `fleet-team:<team>`), and
   * keeps the locks until its claims on the servers have committed and the tokens they took are written
   * back, so that the next claim counts them. Runs past a cap or a rate are left for a later claim
   * (`capped`).
   */
  private async claimWithinCaps(
    control: RunServer,
    servers: readonly RunServer[],
    limits: Pick<Awaited<ReturnType<typeof findQueueSettings>>, 'caps' | 'rates' | 'teamRates'>,
    chosen: ReadonlyArray<ClaimCandidateRow & { server: RunServer }>,
    caller: WorkerCaller,
    request: ClaimRequest,
  ): ReturnType<RunClaims['claimChosen']> {
    const { caps, rates, teamRates } = limits;
    const queues = [...new Set(chosen.map((run) => run.queue).filter((queue) => caps.has(queue) || rates.has(queue)))];
    const teams = [...new Set(chosen.map((run) => run.team).filter((team) => teamRates.has(team)))];
    if (queues.length === 0 && teams.length === 0) return this.claimChosen(chosen, caller, request);
    return withTransaction(control.pool, async (tx) => {
      await lockFleetQueueCaps(tx, queues);
      const capped = queues.filter((queue) => caps.has(queue));
      const counted =
        capped.length === 0
          ? []
          : await Promise.all(
              servers.map((server) => this.servers.unlessUnavailable(() => countLeasedByQueue(server.pool, capped))),
            );
      const rooms = new Map(
        capped.map((queue) => [
          queue,
          caps.get(queue)! - counted.reduce((sum, c) => sum + (c.ok ? (c.value.get(queue) ?? 0) : 0), 0),
        ]),
      );
      const queueBucket = (queue: string): string => `fleet-queue:${queue}`;
      const teamBucket = (team: string): string => `fleet-team:${team}`;
      const tokens = await lockAndCountLimits(tx, {
        queues: [],
        jobs: [],
        keys: [],
        orders: [],
        rates: [
          ...queues.flatMap((queue) => {
            const rate = rates.get(queue);
            return rate === undefined ? [] : [{ name: queueBucket(queue), ...rate }];
          }),
          ...teams.map((team) => ({ name: teamBucket(team), ...teamRates.get(team)! })),
        ],
      });
      const fitting = takeWithinRooms(chosen, (run) => [
        [rooms, run.queue],
        [tokens.rates, queueBucket(run.queue)],
        [tokens.rates, teamBucket(run.team)],
      ]);
      const claimed = await this.claimChosen(fitting, caller, request);
      const runOf = new Map(chosen.map((run) => [run.run_id, run]));
      const taken = new Map<string, number>();
      for (const { runId } of claimed.leases) {
        const run = runOf.get(runId)!;
        for (const bucket of [queueBucket(run.queue), teamBucket(run.team)])
          if (tokens.buckets.has(bucket)) taken.set(bucket, (taken.get(bucket) ?? 0) + 1);
      }
      await takeRateTokens(tx, taken, tokens.buckets);
      return { ...claimed, capped: claimed.capped || fitting.length < chosen.length };
    });
  }

  /**
   * The chosen runs claimed on their servers, at once, in a transaction each (timed as a claim); the
   * claims of the servers that answer, put together.
   */
  private async claimChosen(
    chosen: ReadonlyArray<ClaimCandidateRow & { server: RunServer }>,
    caller: WorkerCaller,
    request: ClaimRequest,
  ): Promise<{ leases: LeasedRun[]; capped: boolean; decided: RunDecision[] }> {
    const answers = await Promise.all(
      this.servers
        .split(chosen, (run) => run.server)
        .map(([server, runs]) => {
          const wanted = { ...request, max: runs.length };
          const pick = { runIds: runs.map((run) => run.run_id) };
          return this.servers.unlessUnavailable(() =>
            this.timedClaim(() => server.decisions.unitOfWork((work) => claimReadyRuns(work, caller, wanted, pick))),
          );
        }),
    );
    const claims = answers.flatMap((a) => (a.ok ? [a.value] : []));
    for (const claim of claims) this.ready.noteLimited(claim.limits);
    return {
      leases: claims.flatMap((c) => c.leases),
      capped: claims.some((c) => c.capped),
      decided: claims.flatMap((c) => c.decided),
    };
  }

  private async timedClaim<T>(claim: () => Promise<T>): Promise<T> {
    const done = this.metrics.timeClaim();
    try {
      return await claim();
    } finally {
      done();
    }
  }
}

/** The candidates kept for a claim (CandidateBuffer) are those of the same caller's scope, grants and prefetch. */
function keptScope(scope: ClaimScope, grants: readonly QueueGrantRow[], prefetchMs = 0): string {
  return JSON.stringify([scope.team, scope.queues, scope.teamsServed, prefetchMs, grants]);
}
