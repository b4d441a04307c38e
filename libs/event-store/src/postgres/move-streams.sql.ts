import { withTransaction } from '@chronicle/platform';
import type { Pool } from 'pg';
import { START, type LogPosition, type RecordedEvent } from '../event-store.port';
import { InvalidAppendError } from '../event-store.errors';
import { withMetadataColumns } from './metadata-columns';
import { streamKey } from './stream-key';

/**
 * EventStore.importEvents on this log, in one transaction: the streams' locks taken (es_append's, in
 * order), each stream's head looked for, the first revision given checked against it, then the
 * events inserted in the order given (so the global log holds them in that order, each stream's
 * revisions ascending), with their recorded times. A stream goes where its head is; a new one where a
 * stream begun at its first event's time would (es_new_stream_home's rule at that time): a week
 * without its partition here goes to the default one, which retention sorts out.
 */
export async function importEvents(pool: Pool, events: readonly RecordedEvent[]): Promise<LogPosition> {
  if (events.length === 0) return START;
  const rows = events.map((e, i) =>
    withMetadataColumns(
      {
        i,
        id: e.id,
        stream: e.streamId,
        key: streamKey(e.streamId).toString('hex'),
        revision: e.revision.toString(),
        type: e.type,
        data: e.data,
        recorded_at: e.recordedAt.toISOString(),
      },
      e.metadata,
    ),
  );
  return withTransaction(pool, async (tx) => {
    await tx.query(
      `SELECT pg_advisory_xact_lock(stream_lock_key(s)) FROM (SELECT DISTINCT unnest($1::text[]) AS s) u ORDER BY s`,
      [[...new Set(events.map((e) => e.streamId))]],
    );
    const { rows: broken } = await tx.query<{ stream: string; first: string; head: string | null }>(
      `WITH given AS (
         SELECT x.stream, decode(x.key, 'hex') AS key, min(x.revision) AS first
           FROM json_to_recordset($1::json) AS x(stream text, key text, revision bigint) GROUP BY x.stream, x.key
       )
       SELECT g.stream, g.first, h.head FROM given g
         LEFT JOIN LATERAL (
           SELECT max(e.stream_revision) AS head FROM events e WHERE e.stream_key = g.key
         ) h ON true
        WHERE g.first <> coalesce(h.head, -1) + 1`,
      [JSON.stringify(rows)],
    );
    if (broken.length > 0) {
      const b = broken[0]!;
      throw new InvalidAppendError(
        `stream ${b.stream}: the events taken begin at revision ${b.first}, and its head here is ${b.head ?? 'none'}`,
      );
    }
    const { rows: written } = await tx.query<{ commit: string; prepare: string }>(
      `WITH x AS (
         SELECT x.*, decode(x.key, 'hex') AS stream_key
           FROM json_to_recordset($1::json) AS x(i integer, id uuid, stream text, key text, revision bigint,
                type text, data json, metadata json, actor text, team text, cid text, cu uuid, sv smallint,
                recorded_at timestamptz)
       )
       INSERT INTO events (event_id, stream_key, stream_revision, event_type, data, metadata, actor, team,
                           correlation_id, correlation_uuid, schema_version, recorded_at, kept_on)
       SELECT x.id, x.stream_key, x.revision, x.type, x.data, x.metadata, x.actor, x.team, x.cid, x.cu, x.sv,
              x.recorded_at,
              coalesce(
                (SELECT e.kept_on FROM events e WHERE e.stream_key = x.stream_key LIMIT 1),
                CASE WHEN es_stream_ends(x.stream)
                     THEN date_trunc('week', (min(x.recorded_at) OVER (PARTITION BY x.stream)) AT TIME ZONE 'UTC')::date
                     ELSE 'infinity'::date END)
         FROM x ORDER BY x.i
       RETURNING transaction_id::text AS commit, global_position::text AS prepare`,
      [JSON.stringify(rows)],
    );
    const last = written.reduce((a, b) => (BigInt(b.prepare) > BigInt(a.prepare) ? b : a));
    return { commit: BigInt(last.commit), prepare: BigInt(last.prepare) };
  });
}

/** EventStore.removeStreams on this log: the streams' events deleted under their locks. */
export async function removeStreams(pool: Pool, streamIds: readonly string[]): Promise<number> {
  if (streamIds.length === 0) return 0;
  return withTransaction(pool, async (tx) => {
    await tx.query(
      `SELECT pg_advisory_xact_lock(stream_lock_key(s)) FROM (SELECT DISTINCT unnest($1::text[]) AS s) u ORDER BY s`,
      [streamIds],
    );
    const { rowCount } = await tx.query('DELETE FROM events WHERE stream_key = ANY($1::bytea[])', [
      streamIds.map(streamKey),
    ]);
    return rowCount ?? 0;
  });
}
