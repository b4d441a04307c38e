import type { RecordedEvent } from '@chronicle/event-store';
import type { Queryable } from '@chronicle/platform';
import { RunEventType, recordedRunPlace, type RunLeasedData, type RunScheduledData } from '@chronicle/domain';
import type { BulkIo, Projection } from '../projection';
import { emptyLagCounts, lagBucketOf, scheduleLagMs } from './lag-histogram';
import { addActivity, findRunPlaces, runPlace, type ActivityIncrement, type RunPlace } from './run-activity.sql';

const RUN_PREFIX = 'run-';
/** A run's place is in its RunScheduled's data: read from there, counted by none. */
const PLACING = RunEventType.RunScheduled as string;
const COUNTED = new Set<string>([
  RunEventType.RunLeased,
  RunEventType.RunSucceeded,
  RunEventType.RunFailed,
  RunEventType.LeaseExpired,
  RunEventType.RunDead,
]);

/**
 * The places of the runs this process's projectors met, by run id: read from their RunScheduled (or
 * their rows), so that their later events are counted without reading a row. A run's place never
 * changes once scheduled and a run id names one run in the deployment, so every runner of the
 * process may share them. A run is forgotten when it ends (a replay reads its row again), and past
 * HELD_PLACES the oldest are (a backlog larger than that is placed by its rows).
 */
const known = new Map<string, RunPlace>();
const ENDED = new Set<string>([RunEventType.RunSucceeded, RunEventType.RunDead, RunEventType.RunCancelled]);

/** The runs that ended in `events` forgotten, and the oldest beyond HELD_PLACES. */
function forgetEnded(places: Map<string, RunPlace>, events: readonly RecordedEvent[]): void {
  for (const event of events) if (ENDED.has(event.type)) places.delete(runIdOf(event));
  if (places.size <= HELD_PLACES) return;
  let over = places.size - HELD_PLACES * 0.75;
  for (const runId of places.keys()) {
    if (over-- <= 0) break;
    places.delete(runId);
  }
}

/** Each RunScheduled of `events` placed in `places`: its run's place is in its data. */
function learnPlaces(places: Map<string, RunPlace>, events: readonly RecordedEvent[]): void {
  for (const event of events)
    if (event.type === PLACING && event.streamId.startsWith(RUN_PREFIX)) {
      const { team, queue, priority, dueAt } = event.data as RunScheduledData;
      places.set(runIdOf(event), runPlace(team, queue, priority, new Date(dueAt)));
    }
}

/**
 * Per minute, team, queue and priority: leases, successes, failures, lease expiries, new dead runs,
 * and the schedule lag of first leases (attempt 1: a retry's wait is its backoff, not lag), from the
 * log. Unlike the other projections it counts, so it is not idempotent by revision: it is exact
 * because the runner applies a batch exactly once, in the transaction that moves the checkpoint
 * (whose compare-and-set refuses a second runner). It runs after the runs projection, in the same
 * transaction, so every run it meets has its row (team, queue, priority, due time).
 */
export const runActivityProjection: Projection = {
  name: 'run-activity',
  version: 1,
  eventTypes: new Set([...COUNTED, ...ENDED, PLACING]),
  tables: ['run_activity_minutes'],
  // Counters: only the projector writes them, so a rebuild is exactly the log up to its checkpoint.
  writtenThrough: false,

  async apply(db: Queryable, events: readonly RecordedEvent[]): Promise<void> {
    const increments = await activityOf(db, events, known);
    forgetEnded(known, events);
    if (increments.length > 0) await addActivity(db, increments);
  },

  // The counts are sums: held over batches and added in one write (or per HELD_INCREMENTS), the runs'
  // places kept (they never change) for the runs' later events, as `known` keeps them.
  bulkBuild: () => {
    let increments = new Increments();
    const places = new Map<string, RunPlace>();
    const flush = (io: BulkIo): Promise<void> => {
      const added = increments.all();
      increments = new Increments();
      return io.write((db) => addActivity(db, added));
    };
    return {
      add: async (io, events) => {
        learnPlaces(places, events);
        const runEvents = counted(events);
        await placeRuns(places, runEvents, (ids) => io.read((db) => findRunPlaces(db, ids)));
        countInto(increments, runEvents, places);
        forgetEnded(places, events);
        if (increments.size >= HELD_INCREMENTS) await flush(io);
      },
      flush,
    };
  },

  async reset(db: Queryable): Promise<void> {
    await db.query('TRUNCATE run_activity_minutes');
  },
};

/**
 * What `events` add to the counts, by minute and place, their runs placed by `db`'s rows where the
 * events do not record it: what the projection adds for them, and what a server takes away when their
 * runs move to another (`chronicle shards move`: the other server counts them from its copy of the log).
 */
export async function activityOf(
  db: Queryable,
  events: readonly RecordedEvent[],
  known = new Map<string, RunPlace>(),
): Promise<ActivityIncrement[]> {
  learnPlaces(known, events);
  const runEvents = counted(events);
  if (runEvents.length === 0) return [];
  const places = await placeRuns(known, runEvents, (ids) => findRunPlaces(db, ids));
  const increments = new Increments();
  countInto(increments, runEvents, places);
  return increments.all();
}

/** Runs' places a bulk build and the projector keep at most, and the increments a bulk build holds before writing them. */
const HELD_PLACES = 200_000;
const HELD_INCREMENTS = 20_000;

function counted(events: readonly RecordedEvent[]): RecordedEvent[] {
  return events.filter((e) => e.streamId.startsWith(RUN_PREFIX) && COUNTED.has(e.type));
}

/**
 * `places` with every run of the events placed: by what its events record (RunPlaceMetadata, on
 * events recorded before their RunScheduled alone held it), else by `lookUp` of its row. Resolves
 * with `places`.
 */
async function placeRuns(
  places: Map<string, RunPlace>,
  runEvents: readonly RecordedEvent[],
  lookUp: (runIds: string[]) => Promise<ReadonlyMap<string, RunPlace>>,
): Promise<Map<string, RunPlace>> {
  const unknown = new Set<string>();
  for (const event of runEvents) {
    const id = runIdOf(event);
    if (places.has(id)) continue;
    const recorded = recordedRunPlace(event.metadata);
    if (recorded === undefined) unknown.add(id);
    else {
      places.set(id, runPlace(recorded.team, recorded.queue, recorded.priority, new Date(recorded.dueAt)));
      unknown.delete(id);
    }
  }
  if (unknown.size > 0) for (const [id, place] of await lookUp([...unknown])) places.set(id, place);
  return places;
}

function runIdOf(event: RecordedEvent): string {
  return event.streamId.slice(RUN_PREFIX.length);
}

/**
 * The increments by (team, queue, priority) and minute: a map per place's group, keyed by the minute
 * (a rebuild counts a million events; no key string is built per event).
 */
class Increments {
  readonly #byGroup = new Map<string, Map<number, ActivityIncrement>>();
  size = 0;

  of(place: RunPlace, minuteMs: number): ActivityIncrement | undefined {
    return this.#byGroup.get(place.group)?.get(minuteMs);
  }

  add(place: RunPlace, minuteMs: number, increment: ActivityIncrement): void {
    let minutes = this.#byGroup.get(place.group);
    if (minutes === undefined) this.#byGroup.set(place.group, (minutes = new Map()));
    minutes.set(minuteMs, increment);
    this.size += 1;
  }

  all(): ActivityIncrement[] {
    return [...this.#byGroup.values()].flatMap((minutes) => [...minutes.values()]);
  }
}

/** Each event added to the increment of its minute and its run's place; a run without a row is not counted. */
function countInto(
  increments: Increments,
  runEvents: readonly RecordedEvent[],
  places: ReadonlyMap<string, RunPlace>,
): void {
  for (const event of runEvents) {
    const place = places.get(runIdOf(event));
    if (place === undefined) continue; // no row: a run deleted from the read model, nothing to count it under
    const minuteMs = Math.floor(event.recordedAt.getTime() / 60_000) * 60_000;
    let increment = increments.of(place, minuteMs);
    if (increment === undefined) {
      increment = {
        minute: new Date(minuteMs),
        team: place.team,
        queue: place.queue,
        priority: place.priority,
        leased: 0,
        succeeded: 0,
        failed: 0,
        leaseExpired: 0,
        dead: 0,
        lagCounts: emptyLagCounts(),
      };
      increments.add(place, minuteMs, increment);
    }
    count(increment, event, place.dueAt);
  }
}

function count(increment: ActivityIncrement, event: RecordedEvent, dueAt: Date): void {
  switch (event.type) {
    case RunEventType.RunLeased: {
      increment.leased += 1;
      const lagMs = scheduleLagMs(event.data as RunLeasedData, dueAt);
      if (lagMs !== null) increment.lagCounts[lagBucketOf(lagMs)]! += 1;
      return;
    }
    case RunEventType.RunSucceeded:
      increment.succeeded += 1;
      return;
    case RunEventType.RunFailed:
      increment.failed += 1;
      return;
    case RunEventType.LeaseExpired:
      increment.leaseExpired += 1;
      return;
    case RunEventType.RunDead:
      increment.dead += 1;
      return;
  }
}
