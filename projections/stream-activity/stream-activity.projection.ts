import type { Queryable } from '@chronicle/platform';
import type { RecordedEvent } from '@chronicle/event-store';
import type { Projection } from '../projection';

const RUN_CATEGORY = 'run';

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
    const latest = new Map<string, RecordedEvent>();
    for (const event of events) {
      if (categoryOf(event.streamId) === RUN_CATEGORY) continue;
      const seen = latest.get(event.streamId);
      if (seen === undefined || seen.revision < event.revision) latest.set(event.streamId, event);
    }
    if (latest.size === 0) return;
    const rows = [...latest.values()];
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
