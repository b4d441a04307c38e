import {
  decide,
  DomainError,
  RUN_EVENT_SCHEMA_VERSION,
  type PresentRun,
  type RunCommand,
  type RunEvent,
  type TraceContext,
  type WorkerCaller,
  workerActor,
} from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import type { RunBatch, RunDecision } from '../unit-of-work/run-batch';
import { changedWhileDecided, type RunDecisions } from '../unit-of-work/run-decisions';
import { lockAndLoadRuns } from './complete-runs.sql';

/** The worker's attempt's trace of a run, where its call named one (docs/operations.md, "Traces"). */
export type AttemptTraceOf = (runId: string) => TraceContext | undefined;

/** Per run of a worker's batch: the run after the decision, or why that run alone was refused. */
export type WorkerDecision =
  { readonly runId: string; readonly run: PresentRun } | { readonly runId: string; readonly refused: DomainError };

/**
 * A worker's decisions on many runs at once (completions, heartbeats), in
 * one unit of work: lock the runs' streams, read their rows, decide each (a
 * refusal, such as a stale fencing token, refuses that run alone), append
 * every outcome in one multi-stream append expecting the revisions read,
 * write the rows through. Four round trips for up to 100 runs (BEGIN, lock
 * and read, append with the rows, COMMIT). A run the
 * worker may not see (another team's, another queue's) reads as absent.
 * Runs appended whose rows then fail to commit stay reserved.
 */
export function decideForWorker(
  decisions: RunDecisions,
  caller: WorkerCaller,
  runIds: readonly string[],
  command: (run: PresentRun, now: Date) => RunCommand,
  traceOf?: AttemptTraceOf,
): Promise<WorkerDecision[]> {
  return decisions.unitOfWork(async (work) => {
    const prepared = await prepareWorkerDecisions(work.tx, caller, runIds, command, traceOf);
    const [decided] = await work.decide({ batches: [prepared.batch] });
    return prepared.answer(decided!);
  });
}

/**
 * The first half of decideForWorker, for a unit of work that appends more
 * beside it (a completion that also claims): the runs locked and read, the
 * batch to decide, and the answer per run once it is decided.
 */
export async function prepareWorkerDecisions(
  tx: Queryable,
  caller: WorkerCaller,
  runIds: readonly string[],
  command: (run: PresentRun, now: Date) => RunCommand,
  traceOf?: AttemptTraceOf,
): Promise<{ batch: RunBatch; answer: (decided: readonly RunDecision[]) => WorkerDecision[] }> {
  const refused = new Map<string, DomainError>();
  const proposed = new Set<string>();
  const { runs, now } = await lockAndLoadRuns(tx, [...new Set(runIds)]);
  const decideOne = (run: PresentRun): RunEvent[] | null => {
    try {
      const events = decide(command(run, now), run);
      if (events.length > 0) proposed.add(run.definition.runId);
      return events;
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      refused.set(run.definition.runId, err);
      return null;
    }
  };
  const batch: RunBatch = {
    runs: runs.filter((run) => mayActOn(caller, run)),
    decideOne,
    // The worker that holds the lease (the fencing token proves it), as the claim named it.
    // The attempt's trace, where the worker named it, rather than its call's (a call may report many attempts).
    metadata: (run) => ({
      actor: workerActor(caller, run.lease?.workerId),
      schemaVersion: RUN_EVENT_SCHEMA_VERSION,
      ...traceOf?.(run.definition.runId),
    }),
  };
  const answer = (decided: readonly RunDecision[]): WorkerDecision[] => {
    const after = new Map(decided.map((d) => [d.after.definition.runId, d.after]));
    return runIds.map((runId) => {
      const run = after.get(runId);
      if (run !== undefined) return { runId, run };
      // Decided, but its append met a newer revision (a log of its own, the row behind it): not lost, not done.
      if (proposed.has(runId)) return { runId, refused: changedWhileDecided(runId) };
      return { runId, refused: refused.get(runId) ?? new DomainError('not-found', `run ${runId} not found`) };
    });
  };
  return { batch, answer };
}

/** A worker acts on runs of its queues, of its team unless it is a platform worker. */
function mayActOn(caller: WorkerCaller, run: PresentRun): boolean {
  return caller.queues.includes(run.definition.queue) && (caller.team === null || caller.team === run.definition.team);
}
