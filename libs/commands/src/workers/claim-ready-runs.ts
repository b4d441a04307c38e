import { decide, RUN_EVENT_SCHEMA_VERSION, type WorkerCaller, type PriorityWeights } from '@chronicle/domain';
import type { UnitOfWork } from '@chronicle/event-store';
import type { LeasedRun } from '@chronicle/worker-sdk';
import { decideAndAppendRuns } from '../unit-of-work/decide-runs';
import { loadLockedRuns, lockReadyRuns, withinConcurrencyLimits, type ClaimScope } from './claim-ready-runs.sql';

/** What a worker asks a claim for. */
export interface ClaimRequest {
  readonly queues: readonly string[];
  readonly max: number;
  readonly leaseSeconds: number;
  readonly workerId: string;
}

/**
 * One claim in the caller's unit of work, five round trips for the whole
 * batch: lock candidates (the dispatch policy), read them, append every
 * RunLeased (expecting the revision read, under the lock no other writer can
 * move it), write the rows through; two more when a concurrency-limited
 * job's runs are among them. Committing is the caller's. `capped`: runs of
 * a limited job were left out for its headroom, so the batch may be short.
 * `reserved`: runs not to propose (RunReservations.reservedRunIds).
 */
export async function claimReadyRuns(
  uow: UnitOfWork,
  caller: WorkerCaller,
  request: ClaimRequest,
  weights: PriorityWeights,
  teamsServed = 1,
  reserved: readonly string[] = [],
): Promise<{ leases: LeasedRun[]; capped: boolean }> {
  const scope: ClaimScope = { team: caller.team, queues: request.queues, teamsServed };
  const { runIds, capped } = await lockReadyRuns(uow.tx, scope, request.max, weights, reserved);
  if (runIds.length === 0) return { leases: [], capped };
  const locked = await loadLockedRuns(uow.tx, runIds);
  const [runs, now] = [await withinConcurrencyLimits(uow.tx, locked.runs, locked.limitedJobs), locked.now];
  const decisions = await decideAndAppendRuns(
    uow,
    runs,
    (run) => decide({ type: 'LeaseRun', workerId: request.workerId, leaseSeconds: request.leaseSeconds, now }, run),
    { actor: `worker:${caller.team ?? 'platform'}:${request.workerId}`, schemaVersion: RUN_EVENT_SCHEMA_VERSION },
  );
  const leases = decisions.flatMap(({ after, events }) =>
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
              payload: after.definition.payload,
            },
          ]
        : [],
    ),
  );
  return { leases, capped: capped || runs.length < locked.runs.length };
}
