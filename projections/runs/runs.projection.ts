import type { RecordedEvent } from '@chronicle/event-store';
import type { Queryable } from '@chronicle/platform';
import { RunEventType, type PresentRun, ABSENT, evolve, upcastEvent, type RunSnapshot } from '@chronicle/domain';
import type { Projection } from '../projection';
import { findRunSnapshots, upsertRuns } from './runs.sql';

/**
 * The `runs` table from the log: each run's row is its decider state, folded
 * on from the row's own revision. Commands write the same rows through at
 * once; here those events are already reflected and are skipped.
 */
export const runsProjection: Projection = {
  name: 'runs',
  version: 1,
  eventTypes: new Set(Object.values(RunEventType)),
  tables: ['runs', 'run_listing'],
  writtenThrough: true,

  async apply(db: Queryable, events: readonly RecordedEvent[]): Promise<void> {
    const byRun = groupByStream(events, 'run-');
    // Rows written through already reflect their events: only the revisions are read for those, a snapshot only
    // for a row behind.
    const { rows: revisions } = await db.query<{ run_id: string; revision: string }>(
      'SELECT run_id, revision FROM runs WHERE run_id = ANY($1::text[])',
      [[...byRun.keys()]],
    );
    const reflected = new Map(revisions.map((r) => [r.run_id, Number(r.revision)]));
    for (const [runId, runEvents] of byRun)
      if ((reflected.get(runId) ?? -1) >= Number(runEvents[runEvents.length - 1]!.revision)) byRun.delete(runId);
    if (byRun.size === 0) return;
    const current = new Map<string, RunSnapshot>(
      (await findRunSnapshots(db, [...byRun.keys()])).map((run) => [run.definition.runId, run]),
    );
    const changed: PresentRun[] = [];
    for (const [runId, runEvents] of byRun) {
      const before = current.get(runId) ?? ABSENT;
      const after = foldFrom(before, runEvents, runId, evolve);
      if (after !== before && after.status !== 'absent') changed.push(after);
    }
    await upsertRuns(db, changed);
  },

  async reset(db: Queryable): Promise<void> {
    await db.query('TRUNCATE runs, run_listing');
  },
};

/** Events of streams `<prefix><id>`, by id, in log order. */
export function groupByStream(events: readonly RecordedEvent[], prefix: string): Map<string, RecordedEvent[]> {
  const groups = new Map<string, RecordedEvent[]>();
  for (const event of events) {
    if (!event.streamId.startsWith(prefix)) continue;
    const id = event.streamId.slice(prefix.length);
    const group = groups.get(id) ?? [];
    group.push(event);
    groups.set(id, group);
  }
  return groups;
}

/** Apply the events newer than the state's revision, in order; a missing revision is a broken log. */
export function foldFrom<State extends { revision: number }, Event>(
  state: State,
  events: readonly RecordedEvent[],
  id: string,
  step: (state: State, event: Event) => State,
): State {
  let result = state;
  for (const event of events) {
    const revision = Number(event.revision);
    if (revision <= result.revision) continue;
    if (revision !== result.revision + 1)
      throw new Error(`stream of ${id}: revision ${revision} follows ${result.revision}`);
    result = step(result, upcastEvent(event) as Event);
  }
  return result;
}
