import type { Queryable } from '@chronicle/platform';
import type { RecordedEvent } from '@chronicle/event-store';
import type { BulkIo, Projection } from '../projection';

interface StreamActivity {
  readonly streamId: string;
  readonly revision: bigint;
  readonly type: string;
  readonly recordedAt: Date;
}

const RUN_CATEGORY = 'run';
const RUN_PREFIX = `${RUN_CATEGORY}-`;
/** Streams a bulk build holds at most before writing them. */
const HELD_STREAMS = 50_000;

/**
 * The latest event of every stream but the runs' (`job-…` and the like), by
 * category. Runs are not here: the runs read model carries the same for
 * them (revision, state, updated_at), and a row here per run transition
 * would be one more write on the hot path for nobody. The upsert applies
 * only a newer revision, so replaying events is harmless.
 */
export const streamActivityProjection: Projection = {
  name: 'stream-activity',
  version: 2,
  eventTypes: 'all',
  tables: ['stream_activity'],
  writtenThrough: false,

  async apply(db: Queryable, events: readonly RecordedEvent[]): Promise<void> {
    // One statement per batch: the last event per stream wins inside the batch.
    const latest = new Map<string, StreamActivity>();
    noteLatest(latest, events);
    await upsertStreamActivity(db, [...latest.values()]);
  },

  // Streams other than runs are few (jobs): held over batches, written once each (or per HELD_STREAMS).
  bulkBuild: () => {
    const latest = new Map<string, StreamActivity>();
    const flush = (io: BulkIo): Promise<void> => {
      const rows = [...latest.values()];
      latest.clear();
      return io.write((db) => upsertStreamActivity(db, rows));
    };
    return {
      add: async (io, events) => {
        noteLatest(latest, events);
        if (latest.size >= HELD_STREAMS) await flush(io);
      },
      flush,
    };
  },

  async reset(db: Queryable): Promise<void> {
    await db.query('TRUNCATE stream_activity');
  },
};

/** `run-123` -> `run`: the part before the first dash, as KurrentDB's $by_category. */
export function categoryOf(streamId: string): string {
  const dash = streamId.indexOf('-');
  return dash <= 0 ? streamId : streamId.slice(0, dash);
}

/** Into `latest`, by stream: the newest of these events of each stream but the runs'. */
function noteLatest(latest: Map<string, StreamActivity>, events: readonly RecordedEvent[]): void {
  for (const event of events) {
    // Most of the log is runs': told apart without cutting a string out of each id (categoryOf).
    if (event.streamId.startsWith(RUN_PREFIX) || event.streamId === RUN_CATEGORY) continue;
    const seen = latest.get(event.streamId);
    if (seen === undefined || seen.revision < event.revision)
      latest.set(event.streamId, {
        streamId: event.streamId,
        revision: event.revision,
        type: event.type,
        recordedAt: event.recordedAt,
      });
  }
}

/** Each stream's row set to its newest event, unless it has a newer one already. */
async function upsertStreamActivity(db: Queryable, rows: readonly StreamActivity[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO stream_activity AS s (stream_id, category, revision, last_event_type, last_recorded_at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[])
     ON CONFLICT (stream_id) DO UPDATE
        SET revision = EXCLUDED.revision,
            last_event_type = EXCLUDED.last_event_type,
            last_recorded_at = EXCLUDED.last_recorded_at
      WHERE s.revision < EXCLUDED.revision`,
    [
      rows.map((e) => e.streamId),
      rows.map((e) => categoryOf(e.streamId)),
      rows.map((e) => e.revision.toString()),
      rows.map((e) => e.type),
      rows.map((e) => e.recordedAt),
    ],
  );
}
