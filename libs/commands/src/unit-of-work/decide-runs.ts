import { type RunEvent, type PresentRun, evolve, type RunSnapshot, runStreamId } from '@chronicle/domain';
import { WrongExpectedRevisionError, type StreamAppend, type UnitOfWork } from '@chronicle/event-store';
import { updateRuns } from '@chronicle/projections';

export interface RunDecision {
  readonly after: PresentRun;
  readonly events: readonly RunEvent[];
}

/**
 * The batch half of the claim protocol, shared by claims, completions and
 * the scheduler's passes: for runs whose locks the unit of work holds,
 * decide each, append every run's events in one multi-stream append
 * expecting the revision read, and write the rows through. A run the
 * decider turns down is left out. With a log of its own (no shared
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
  const decisions = new Map<string, RunDecision & { append: StreamAppend }>();
  for (const run of runs) {
    const events = decideOne(run);
    if (events === null || events.length === 0) continue;
    const streamId = runStreamId(run.definition.runId);
    decisions.set(streamId, {
      after: events.reduce<RunSnapshot>(evolve, run) as PresentRun,
      events,
      append: {
        streamId,
        expected: BigInt(run.revision),
        events: events.map((e) => ({ type: e.type, data: e.data, metadata })),
      },
    });
  }
  while (decisions.size > 0) {
    try {
      await uow.append([...decisions.values()].map((d) => d.append));
      break;
    } catch (err) {
      // In a shared transaction a failed append has aborted it: only a log of its own can go on.
      if (uow.atomic || !(err instanceof WrongExpectedRevisionError) || !decisions.has(err.streamId)) throw err;
      decisions.delete(err.streamId);
    }
  }
  if (decisions.size === 0) return [];
  const decided = [...decisions.values()].map(({ after, events }) => ({ after, events }));
  await updateRuns(
    uow.tx,
    decided.map((d) => d.after),
  );
  return decided;
}
