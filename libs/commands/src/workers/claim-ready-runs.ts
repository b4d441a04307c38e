import {
  decide,
  RUN_EVENT_SCHEMA_VERSION,
  type PresentRun,
  type PriorityWeights,
  type RunEvent,
  type WorkerCaller,
  workerActor,
} from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import type { LeasedRun } from '@chronicle/worker-sdk';
import { payloadOf, type PayloadStore } from '../payloads/payload-store';
import type { RunBatch, RunDecision } from '../unit-of-work/run-batch';
import type { RunsUnitOfWork } from '../unit-of-work/run-decisions';
import {
  lockChosenRuns,
  lockReadyRuns,
  withinConcurrencyLimits,
  type ClaimScope,
  type LockedRuns,
  type WithinLimits,
} from './claim-ready-runs.sql';

/**
 * The limits a claim found among its runs: their jobs with a run limit, their queues with a cap, and the
 * rate buckets it found without a whole token (RateBucket.name).
 */
export type ClaimLimits = Pick<LockedRuns, 'limitedJobs' | 'cappedQueues'> & { readonly throttled: readonly string[] };

/** What a worker asks a claim for. */
export interface ClaimRequest {
  readonly queues: readonly string[];
  readonly max: number;
  readonly leaseSeconds: number;
  readonly workerId: string;
  /** Runs due within this many milliseconds are leased too, each to start at its due time (MAX_PREFETCH_MS). */
  readonly prefetchMs?: number;
}

/**
 * How a claim picks its runs: by the dispatch policy from its server's ready runs, with the priorities'
 * weights; or the runs the policy chose over several servers already (chooseRuns, LeaseRunsHandler),
 * of which it takes those still ready whose locks are free.
 */
export type ClaimPick = PriorityWeights | ChosenRuns;

/** Runs chosen by the dispatch policy over several servers, all on the claim's server. */
export interface ChosenRuns {
  readonly runIds: readonly string[];
}

/**
 * One claim in the caller's unit of work on runs, two round trips for the
 * whole batch: lock candidates (`pick`) and read them, then
 * append every RunLeased (expecting the revision read, under the lock no
 * other writer can move it) with the rows written through; two more when a
 * concurrency-limited job's runs are among them. Committing is the caller's.
 * `capped`: runs of a limited job were left out for its headroom, so the
 * batch may be short. `decided`: for the counters (RunMetrics), once
 * committed. `reserved`: runs not to propose (RunDecisions.reservedRunIds).
 * `teamsServed` and `reserved` are the dispatch policy's: chosen runs were
 * picked with them already.
 */
export async function claimReadyRuns(
  work: RunsUnitOfWork,
  caller: WorkerCaller,
  request: ClaimRequest,
  pick: ClaimPick,
  teamsServed = 1,
  reserved: readonly string[] = [],
): Promise<{ leases: LeasedRun[]; capped: boolean; decided: RunDecision[]; limits: ClaimLimits }> {
  const claim = await prepareClaim(work.tx, caller, request, pick, teamsServed, reserved);
  const { capped, limits } = claim;
  if (claim.batch.runs.length === 0) return { leases: [], capped, decided: [], limits };
  const [decided] = await work.decide({ batches: [claim.batch] });
  await claim.takeTokens(decided!.map((d) => d.after));
  return { leases: leasesOf(decided!), capped, decided: decided!, limits };
}

/**
 * The first half of a claim, for a unit of work that appends more beside it
 * (a completion that also claims): the runs locked and read, and the batch
 * that leases them. Locks only: nothing is written yet.
 */
export async function prepareClaim(
  tx: Queryable,
  caller: WorkerCaller,
  request: ClaimRequest,
  pick: ClaimPick,
  teamsServed = 1,
  reserved: readonly string[] = [],
): Promise<{ batch: RunBatch; capped: boolean; limits: ClaimLimits; takeTokens: WithinLimits['takeTokens'] }> {
  const scope: ClaimScope = { team: caller.team, queues: request.queues, teamsServed };
  const metadata = {
    actor: workerActor(caller, request.workerId),
    schemaVersion: RUN_EVENT_SCHEMA_VERSION,
  };
  const prefetchMs = request.prefetchMs ?? 0;
  const locked =
    'runIds' in pick
      ? await lockChosenRuns(tx, pick.runIds, prefetchMs)
      : await lockReadyRuns(tx, scope, request.max, pick, reserved, prefetchMs);
  const { capped, now } = locked;
  const found = { limitedJobs: locked.limitedJobs, cappedQueues: locked.cappedQueues };
  if (locked.runs.length === 0)
    return {
      batch: { runs: [], decideOne: () => null, metadata },
      capped,
      limits: { ...found, throttled: [] },
      takeTokens: async () => undefined,
    };
  const { runs, throttled = [], takeTokens } = await withinConcurrencyLimits(tx, locked.runs, locked);
  const decideOne = (run: PresentRun): RunEvent[] =>
    decide({ type: 'LeaseRun', workerId: request.workerId, leaseSeconds: request.leaseSeconds, now, prefetchMs }, run);
  return {
    batch: { runs, decideOne, metadata },
    capped: capped || runs.length < locked.runs.length,
    limits: { ...found, throttled },
    takeTokens,
  };
}

/**
 * The leases with the payloads stored by reference read from the store (one call, after the claim's
 * transaction): the worker gets every payload inline, as it always did.
 */
export async function withStoredPayloads(
  store: PayloadStore,
  leases: LeasedRun[],
  decided: readonly RunDecision[],
): Promise<LeasedRun[]> {
  const byRef = new Map(
    decided.flatMap(({ after }) =>
      after.definition.payloadRef === undefined ? [] : [[after.definition.runId, after]],
    ),
  );
  if (byRef.size === 0) return leases;
  const found = await store.get([...byRef.values()].map((run) => run.definition.payloadRef!.sha256));
  return leases.map((lease) => {
    const run = byRef.get(lease.runId);
    return run === undefined ? lease : { ...lease, payload: payloadOf(run.definition, found) };
  });
}

/** What the worker is told of the runs a claim leased (payloads stored by reference: see withStoredPayloads). */
export function leasesOf(decided: readonly RunDecision[]): LeasedRun[] {
  return decided.flatMap(({ after, events }) =>
    events.flatMap((event) =>
      event.type === 'RunLeased'
        ? [
            {
              runId: after.definition.runId,
              job: after.definition.job,
              attempt: event.data.attempt,
              idempotencyKey: after.definition.idempotencyKey,
              fencingToken: event.data.fencingToken,
              leaseExpiresAt: event.data.leaseExpiresAt,
              ...(event.data.notBefore === undefined ? {} : { notBefore: event.data.notBefore }),
              payload: after.definition.payload,
              dryRun: after.definition.dryRun === true,
              // The enqueue's trace, which the worker's attempt links to.
              ...after.definition.trace,
            },
          ]
        : [],
    ),
  );
}
