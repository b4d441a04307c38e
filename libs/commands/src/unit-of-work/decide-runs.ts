import {
  DomainError,
  type RunEvent,
  type PresentRun,
  evolve,
  type RunPlaceMetadata,
  type RunSnapshot,
  runStreamId,
} from '@chronicle/domain';
import { WrongExpectedRevisionError, type StreamAppend, type UnitOfWork } from '@chronicle/event-store';
import { runsUpdate } from '@chronicle/projections';
import { recordedMetadata } from './event-metadata';

export interface RunDecision {
  /** The run as its row was read, under its lock. */
  readonly before: PresentRun;
  readonly after: PresentRun;
  readonly events: readonly RunEvent[];
}

/**
 * A decision on a run that its append refused: with a log of its own, the row it was decided from
 * lagged the run's stream. Nothing was written; the caller may ask again.
 */
export function changedWhileDecided(runId: string): DomainError {
  return new DomainError('conflict', `run ${runId} changed while it was decided; ask again`);
}

type Metadata = Readonly<Record<string, unknown>>;

/**
 * Runs whose locks the unit of work holds, how to decide each, and the metadata of their events (the
 * same for all, or each run's: a worker's completions name the worker that held each lease).
 */
export interface RunBatch {
  readonly runs: readonly PresentRun[];
  readonly decideOne: (run: PresentRun) => RunEvent[] | null;
  readonly metadata: Metadata | ((run: PresentRun) => Metadata);
}

/**
 * The batch half of the claim protocol, shared by claims, completions and
 * the scheduler's passes: for runs whose locks the unit of work holds,
 * decide each, append every run's events in one multi-stream append
 * expecting the revision read, and write the rows through. A run the
 * decider turns down is left out. The rows go with the append
 * (UnitOfWork.append's writeThrough: one statement when the log shares the
 * transaction). With a log of its own (no shared
 * transaction), a run whose stream moved on since its row was written (the
 * row lags the log until the projector applies it) is dropped from the
 * batch and the rest appended again: the append decides, the row proposed.
 */
export async function decideAndAppendRuns(
  uow: UnitOfWork,
  runs: readonly PresentRun[],
  decideOne: (run: PresentRun) => RunEvent[] | null,
  metadata: Readonly<Record<string, unknown>>,
): Promise<RunDecision[]> {
  const [decided] = await decideAndAppendBatches(uow, [{ runs, decideOne, metadata }]);
  return decided!;
}

/**
 * Several batches (a worker's completions and its next claim) in one append
 * and one write-through: one unit of work, as few round trips as one batch.
 * Resolves with each batch's decisions, in the batches' order.
 */
export async function decideAndAppendBatches(uow: UnitOfWork, batches: readonly RunBatch[]): Promise<RunDecision[][]> {
  const decisions = new Map<string, RunDecision & { append: StreamAppend; batch: number }>();
  for (const [batch, { runs, decideOne, metadata: metadataOf }] of batches.entries())
    for (const run of runs) {
      const events = decideOne(run);
      if (events === null || events.length === 0) continue;
      const metadata = recordedMetadata({
        ...(typeof metadataOf === 'function' ? metadataOf(run) : metadataOf),
        ...runPlaceMetadata(run),
      });
      const streamId = runStreamId(run.definition.runId);
      decisions.set(streamId, {
        before: run,
        after: events.reduce<RunSnapshot>(evolve, run) as PresentRun,
        events,
        batch,
        append: {
          streamId,
          expected: BigInt(run.revision),
          events: events.map((e) => ({ type: e.type, data: e.data, metadata })),
        },
      });
    }
  while (decisions.size > 0) {
    try {
      const chosen = [...decisions.values()];
      await uow.append(
        chosen.map((d) => d.append),
        runsUpdate(chosen.map((d) => d.after)),
      );
      break;
    } catch (err) {
      // In a shared transaction a failed append has aborted it: only a log of its own can go on.
      if (uow.atomic || !(err instanceof WrongExpectedRevisionError) || !decisions.has(err.streamId)) throw err;
      decisions.delete(err.streamId);
    }
  }
  const decided = batches.map((): RunDecision[] => []);
  for (const { before, after, events, batch } of decisions.values()) decided[batch]!.push({ before, after, events });
  return decided;
}

/**
 * Where a run's events belong, recorded with each: its team, queue, priority and due time (its
 * RunScheduled's). The audit index and the activity counts file an event by them without reading the
 * run's row, and an auditor reading one event sees whose run it was.
 */
function runPlaceMetadata({ definition }: PresentRun): RunPlaceMetadata {
  return { team: definition.team, queue: definition.queue, priority: definition.priority, dueAt: definition.dueAt };
}
