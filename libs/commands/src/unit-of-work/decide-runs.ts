import { type RunEvent, type PresentRun, evolve, type RunSnapshot, runStreamId } from '@chronicle/domain';
import type { StreamAppend, PostgresEventStore } from '@chronicle/event-store';
import type { Queryable } from '@chronicle/platform';
import { updateRuns } from '@chronicle/projections';

export interface RunDecision {
  readonly after: PresentRun;
  readonly events: readonly RunEvent[];
}

/**
 * The batch half of the claim protocol, shared by claims and the reaper: for
 * runs whose stream locks the transaction holds, decide each, append every
 * run's events in one multi-stream append expecting the revision read, and
 * write the rows through. A run the decider turns down is left out.
 */
export async function decideAndAppendRuns(
  tx: Queryable,
  store: PostgresEventStore,
  runs: readonly PresentRun[],
  decideOne: (run: PresentRun) => RunEvent[] | null,
  metadata: Readonly<Record<string, unknown>>,
): Promise<RunDecision[]> {
  const decisions: RunDecision[] = [];
  const appends: StreamAppend[] = [];
  for (const run of runs) {
    const events = decideOne(run);
    if (events === null || events.length === 0) continue;
    decisions.push({ after: events.reduce<RunSnapshot>(evolve, run) as PresentRun, events });
    appends.push({
      streamId: runStreamId(run.definition.runId),
      expected: BigInt(run.revision),
      events: events.map((e) => ({ type: e.type, data: e.data, metadata })),
    });
  }
  if (appends.length === 0) return [];
  await store.appendWith(tx, appends);
  await updateRuns(
    tx,
    decisions.map((d) => d.after),
  );
  return decisions;
}
