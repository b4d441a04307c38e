import type { RecordedEvent } from '@chronicle/event-store';
import type { Queryable } from '@chronicle/platform';
import { RunEventType, type PresentRun, ABSENT, evolve, upcastEvent, type RunSnapshot } from '@chronicle/domain';
import type { BulkBuild, BulkIo, Projection } from '../projection';
import { findRunRevisions, findRunSnapshots, copyNewRuns, lockRunSnapshots, updateRuns, upsertRuns } from './runs.sql';

/**
 * The `runs` table from the log: each run's row is its decider state, folded
 * on from the row's own revision. Commands write the same rows through at
 * once; here those events are already reflected and are skipped.
 */
export const runsProjection: Projection = {
  name: 'runs',
  version: 1,
  eventTypes: new Set(Object.values(RunEventType)),
  tables: ['runs', 'run_listing', 'ready_runs', 'run_leases'],
  writtenThrough: true,

  async apply(db: Queryable, events: readonly RecordedEvent[]): Promise<void> {
    const byRun = groupByStream(events, 'run-');
    // Rows written through already reflect their events: only the revisions are read for those, a snapshot only
    // for a row behind.
    const reflected = await findRunRevisions(db, [...byRun.keys()]);
    for (const [runId, runEvents] of byRun)
      if ((reflected.get(runId) ?? -1) >= Number(runEvents[runEvents.length - 1]!.revision)) byRun.delete(runId);
    if (byRun.size === 0) return;
    // Behind: written here, under the runs' locks (lockRunSnapshots), from their rows as they are once those are held.
    const current = new Map<string, RunSnapshot>(
      (await lockRunSnapshots(db, [...byRun.keys()])).map((run) => [run.definition.runId, run]),
    );
    const changed: PresentRun[] = [];
    const redefined = new Set<string>();
    for (const [runId, runEvents] of byRun) {
      const before = current.get(runId) ?? ABSENT;
      const after = foldFrom(before, runEvents, runId, evolve);
      if (after === before || after.status === 'absent') continue;
      changed.push(after);
      if (before.status !== 'absent' && after.definition !== before.definition) redefined.add(runId);
    }
    await upsertRuns(db, changed, redefined);
  },

  bulkBuild: buildRunsInBulk,

  async reset(db: Queryable): Promise<void> {
    await db.query('TRUNCATE runs, run_listing, ready_runs, run_leases');
  },
};

/** Runs held in memory at most: then the finished ones are written (all of them, if that frees too few). */
const HELD_RUNS = 50_000;
/** Rows per statement when updating them. */
const WRITE_CHUNK = 5_000;
const FINISHED: ReadonlySet<PresentRun['status']> = new Set(['succeeded', 'dead', 'cancelled']);

/**
 * The runs' rows from empty tables: each run folded in memory over as many batches as its events
 * span and written once, by COPY, when it has finished (rather than once per batch, as `apply`),
 * in the background while the next batches fold. A run written and then changed again (a replay,
 * or more runs going at once than are held) is read back and updated.
 */
export function buildRunsInBulk(): BulkBuild {
  /**
   * By run id: its state, and whether its row is written already (read back) and, if so, whether its
   * definition changed since (a RunDebounced: its `run_listing` row is written again).
   */
  const held = new Map<string, { run: PresentRun; stored: boolean; redefined?: boolean }>();

  function write(io: BulkIo, which: (run: PresentRun) => boolean): Promise<void> {
    const [fresh, stored] = [[] as PresentRun[], [] as PresentRun[]];
    const redefined = new Set<string>();
    for (const [runId, { run, stored: was, redefined: changed }] of held)
      if (which(run)) {
        (was ? stored : fresh).push(run);
        if (changed === true) redefined.add(runId);
        held.delete(runId);
      }
    return io.write(async (db) => {
      await copyNewRuns(db, fresh);
      for (let i = 0; i < stored.length; i += WRITE_CHUNK)
        await updateRuns(db, stored.slice(i, i + WRITE_CHUNK), redefined);
    });
  }

  return {
    async add(io: BulkIo, events: readonly RecordedEvent[]): Promise<void> {
      const byRun = groupByStream(events, 'run-');
      // A run not held whose events here do not start its stream was written already.
      const written = [...byRun].filter(([id, e]) => !held.has(id) && e[0]!.revision > 0n).map(([id]) => id);
      if (written.length > 0)
        for (const run of await io.read((db) => findRunSnapshots(db, written)))
          held.set(run.definition.runId, { run, stored: true });
      for (const [runId, runEvents] of byRun) {
        const before = held.get(runId);
        const after = foldFrom(before?.run ?? ABSENT, runEvents, runId, evolve);
        if (after.status === 'absent') continue;
        const redefined =
          before?.redefined === true || (before !== undefined && after.definition !== before.run.definition);
        held.set(runId, { run: after, stored: before?.stored ?? false, redefined });
      }
      if (held.size < HELD_RUNS) return;
      await write(io, (run) => FINISHED.has(run.status));
      if (held.size >= HELD_RUNS / 2) await write(io, () => true);
    },
    flush: (io: BulkIo) => write(io, () => true),
  };
}

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
