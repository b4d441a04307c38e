import type { Queryable } from '@chronicle/platform';
import type {
  EventMetadata,
  EventRef,
  FindEventsOptions,
  LogPosition,
  ReadStreamOptions,
  RecordedEvent,
} from '../event-store.port';
import { metadataFromColumns } from './metadata-columns';
import { streamKey } from './stream-key';

interface EventRow {
  event_id: string;
  stream_id: string;
  stream_revision: string;
  commit_position: string;
  global_position: string;
  event_type: string;
  data: string;
  metadata: string | null;
  actor: string | null;
  team: string | null;
  correlation_id: string | null;
  schema_version: number | null;
  recorded_ms: number;
}

// A stream is kept by its key (migrations/0049: a run's stream in 17 bytes, stream-key.ts) and read back
// by its name.
// transaction_id is read as text under another name: ordering by the output
// name would sort by the text and leave the index. data and metadata are read
// as their text and parsed when first looked at (metadata with its columns, metadata-columns.ts; the
// correlation id from the column of its shape): a reader of the whole log
// (the projector) skips most events' data, those its rows already reflect.
// recorded_at as epoch milliseconds (it is stored to the millisecond): a
// number, not a timestamp string to parse.
const COLUMNS = `event_id, es_stream_name(stream_key) AS stream_id, stream_revision, transaction_id::text AS commit_position, global_position, event_type,
  data::text AS data, metadata::text AS metadata, actor, team,
  coalesce(correlation_uuid::text, correlation_id) AS correlation_id, schema_version,
  (extract(epoch FROM recorded_at) * 1000)::float8 AS recorded_ms`;

/** Largest bigint PostgreSQL accepts: "no limit" for LIMIT and revision bounds. */
const MAX_BIGINT = '9223372036854775807';

/** Range scan of events_stream_revision_key, either direction. */
export async function readStreamEvents(
  db: Queryable,
  streamId: string,
  options: ReadStreamOptions = {},
): Promise<RecordedEvent[]> {
  const backwards = options.direction === 'backwards';
  const from = options.fromRevision?.toString() ?? (backwards ? MAX_BIGINT : '0');
  const { rows } = await db.query<EventRow>(
    `SELECT ${COLUMNS} FROM events
      WHERE stream_key = $1
        AND stream_revision ${backwards ? '<=' : '>='} $2
        AND ($3::timestamptz IS NULL OR recorded_at <= $3)
      ORDER BY stream_revision ${backwards ? 'DESC' : 'ASC'}
      LIMIT $4`,
    [streamKey(streamId), from, options.until ?? null, options.maxCount ?? MAX_BIGINT],
  );
  return rows.map(toRecordedEvent);
}

/**
 * Many whole streams in one statement: one probe of events_stream_revision_key per stream (the
 * `= ANY` list), then a sort of just their events.
 */
export async function readStreamsEvents(
  db: Queryable,
  streamIds: readonly string[],
): Promise<Map<string, RecordedEvent[]>> {
  const byStream = new Map<string, RecordedEvent[]>(streamIds.map((id) => [id, []]));
  if (streamIds.length === 0) return byStream;
  const { rows } = await db.query<EventRow>({
    name: 'es_read_streams',
    text: `SELECT ${COLUMNS} FROM events
            WHERE stream_key = ANY($1::bytea[]) ORDER BY stream_key, stream_revision`,
    values: [[...new Set(streamIds)].map(streamKey)],
  });
  for (const row of rows) byStream.get(row.stream_id)?.push(toRecordedEvent(row));
  return byStream;
}

/** Particular events, one probe of events_stream_revision_key each, in the order asked. */
export async function readEventsAt(db: Queryable, refs: readonly EventRef[]): Promise<RecordedEvent[]> {
  if (refs.length === 0) return [];
  const { rows } = await db.query<EventRow>({
    name: 'es_read_events',
    text: `SELECT ${COLUMNS} FROM unnest($1::bytea[], $2::bigint[]) WITH ORDINALITY AS ref(key, revision, n)
             JOIN events ON events.stream_key = ref.key AND events.stream_revision = ref.revision ORDER BY ref.n`,
    values: [refs.map((r) => streamKey(r.streamId)), refs.map((r) => r.revision.toString())],
  });
  return rows.map(toRecordedEvent);
}

/**
 * The global log after `from`, gap-free under concurrent writers: only
 * transactions older than the oldest one still running are read, so an event
 * whose transaction commits later can never sort before what was returned.
 * One range scan of events_pkey (transaction_id, global_position), no sort:
 * the row comparison is the index's own order.
 */
export const READ_ALL_SQL = `SELECT ${COLUMNS} FROM events
  WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint)
    AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
  ORDER BY events.transaction_id, events.global_position
  LIMIT $3`;

export async function readAllEvents(db: Queryable, from: LogPosition, maxCount: number): Promise<RecordedEvent[]> {
  const { rows } = await db.query<EventRow>({
    name: 'es_read_all',
    text: READ_ALL_SQL,
    values: [(from.commit < 0n ? 0n : from.commit).toString(), from.prepare.toString(), maxCount],
  });
  return rows.map(toRecordedEvent);
}

/**
 * The log filtered, newest first (EventStore.findEvents). A team's events are one backwards range scan of
 * events_team_idx (migrations/0035: the team its metadata records, then the log's order), a stream's
 * one of events_stream_revision_key, the rest a backwards scan of events_pkey with the filters applied to
 * each row. Only the filters given are in the statement, so each is planned for its index.
 */
export async function findEvents(db: Queryable, options: FindEventsOptions): Promise<RecordedEvent[]> {
  const values: unknown[] = [];
  const param = (value: unknown): string => `$${values.push(value)}`;
  const conditions: string[] = [];
  if (options.team !== undefined) conditions.push(`team = ${param(options.team)}`);
  if (options.actor !== undefined) conditions.push(`actor = ${param(options.actor)}`);
  if (options.streamId !== undefined) conditions.push(`stream_key = ${param(streamKey(options.streamId))}`);
  if (options.streamPrefix !== undefined)
    conditions.push(`starts_with(es_stream_name(stream_key), ${param(options.streamPrefix)})`);
  if (options.type !== undefined) conditions.push(`event_type = ${param(options.type)}`);
  if (options.since !== undefined) conditions.push(`recorded_at >= ${param(options.since)}`);
  if (options.until !== undefined) conditions.push(`recorded_at < ${param(options.until)}`);
  if (options.before !== undefined)
    conditions.push(
      `(transaction_id, global_position) < (${param(options.before.commit.toString())}::xid8, ${param(options.before.prepare.toString())}::bigint)`,
    );
  const { rows } = await db.query<EventRow>(
    `SELECT ${COLUMNS} FROM events ${conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`}
      ORDER BY events.transaction_id DESC, events.global_position DESC
      LIMIT ${param(options.maxCount)}`,
    values,
  );
  return rows.map(toRecordedEvent);
}

/**
 * Events after `from`, up to `limit`: the same range scan of events_pkey as
 * the global read, stopping at the limit, reading no event's data (an
 * index-only scan where the visibility map allows). Events of transactions
 * still below the readers' horizon count: they are in the log, and a reader
 * has yet to get to them.
 */
export async function countEventsAfter(db: Queryable, from: LogPosition, limit: number): Promise<number> {
  const { rows } = await db.query<{ behind: number }>({
    name: 'es_count_after',
    text: `SELECT count(*)::int AS behind FROM (
             SELECT 1 FROM events
              WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint)
              ORDER BY transaction_id, global_position
              LIMIT $3) AS after_position`,
    values: [(from.commit < 0n ? 0n : from.commit).toString(), from.prepare.toString(), limit],
  });
  return rows[0]!.behind;
}

/**
 * A row as a RecordedEvent: data and metadata parsed when first looked at, on the prototype (no
 * closures per event: a reader of the whole log makes a million of these).
 */
class PostgresRecordedEvent implements RecordedEvent {
  readonly id: string;
  readonly streamId: string;
  readonly revision: bigint;
  readonly position: LogPosition;
  readonly type: string;
  readonly recordedAt: Date;
  #data: string | { value: unknown };
  #metadata: EventRow | { value: EventMetadata };

  constructor(row: EventRow) {
    this.id = row.event_id;
    this.streamId = row.stream_id;
    this.revision = BigInt(row.stream_revision);
    this.position = { commit: BigInt(row.commit_position), prepare: BigInt(row.global_position) };
    this.type = row.event_type;
    this.recordedAt = new Date(row.recorded_ms);
    this.#data = row.data;
    this.#metadata = row;
  }

  get data(): unknown {
    if (typeof this.#data === 'string') this.#data = { value: JSON.parse(this.#data) };
    return this.#data.value;
  }

  get metadata(): EventMetadata {
    if (!('value' in this.#metadata)) this.#metadata = { value: metadataFromColumns(this.#metadata) };
    return this.#metadata.value;
  }
}

function toRecordedEvent(row: EventRow): RecordedEvent {
  return new PostgresRecordedEvent(row);
}
