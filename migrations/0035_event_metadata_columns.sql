-- The keys every decision records in an event's metadata (who decided, the team whose the event is,
-- the request that caused it, the shape of its data) are columns of `events` of their own, not JSON
-- (libs/event-store/src/postgres/metadata-columns.ts). A run event's row was two thirds metadata: its
-- JSON spelled the keys out in every event, was parsed by PostgreSQL on every append, and parsed again
-- for the audit index by team. Now the row carries the values alone, `metadata` only the keys left
-- over (NULL when none), and the team index is a plain one over the column. The log reads them back
-- as one metadata object, as before: nothing outside the PostgreSQL log sees the difference.
--
-- A value of another type than its column's (a team that is not a string) stays in the JSON.

ALTER TABLE events ADD COLUMN actor text, ADD COLUMN team text, ADD COLUMN correlation_id text,
  ADD COLUMN schema_version smallint;
ALTER TABLE events ALTER COLUMN metadata DROP NOT NULL, ALTER COLUMN metadata DROP DEFAULT;

-- The events recorded before: their keys moved into the columns, the same way.
UPDATE events
   SET actor = CASE WHEN json_typeof(metadata->'actor') = 'string' THEN metadata->>'actor' END,
       team = CASE WHEN json_typeof(metadata->'team') = 'string' THEN metadata->>'team' END,
       correlation_id = CASE WHEN json_typeof(metadata->'correlationId') = 'string' THEN metadata->>'correlationId' END,
       schema_version = CASE WHEN metadata->>'schemaVersion' ~ '^-?[0-9]{1,4}$'
                               AND json_typeof(metadata->'schemaVersion') = 'number'
                             THEN (metadata->>'schemaVersion')::smallint END,
       metadata = nullif(metadata::jsonb - array_remove(ARRAY[
                    CASE WHEN json_typeof(metadata->'actor') = 'string' THEN 'actor' END,
                    CASE WHEN json_typeof(metadata->'team') = 'string' THEN 'team' END,
                    CASE WHEN json_typeof(metadata->'correlationId') = 'string' THEN 'correlationId' END,
                    CASE WHEN metadata->>'schemaVersion' ~ '^-?[0-9]{1,4}$'
                          AND json_typeof(metadata->'schemaVersion') = 'number' THEN 'schemaVersion' END
                  ], NULL), '{}'::jsonb)::json
 WHERE json_typeof(metadata) = 'object';

DROP INDEX events_team_idx;
CREATE INDEX events_team_idx ON events (team, transaction_id, global_position) WHERE team IS NOT NULL;

-- As in 0034, the insert writing the columns.
CREATE OR REPLACE FUNCTION es_append(p_streams text[], p_expected bigint[], p_last_ids uuid[], p_events json)
 RETURNS TABLE(r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
 LANGUAGE plpgsql
AS $$
DECLARE
  v_base bigint[];
  v_homes date[];
  v_bad bigint;
  v_bad_current bigint;
  v_bad_unexpected boolean;
  v_own_xid xid8 := pg_current_xact_id_if_assigned();
BEGIN
  -- The shard fence (above): shared with every other append, exclusive for a move's fence.
  PERFORM pg_advisory_xact_lock_shared(chronicle_shard_fence_key());
  IF EXISTS (SELECT 1 FROM moving_shards WHERE direction = 'out') THEN
    PERFORM chronicle_refuse_moving_out(p_streams, p_events);
  END IF;

  -- Lock first, write later (see 0001): sorted, and none for a stream expected not to exist.
  PERFORM pg_advisory_xact_lock(stream_lock_key(u.s))
     FROM unnest(p_streams, p_expected) AS u(s, e) WHERE u.e >= -3 AND u.e <> -1 ORDER BY u.s;

  WITH heads AS (
    SELECT u.i, u.s, u.e, u.l, h.stream_revision AS current, h.transaction_id AS writer, h.event_id AS last_id,
           h.kept_on AS home
      FROM unnest(p_streams, p_expected, p_last_ids) WITH ORDINALITY AS u(s, e, l, i)
      LEFT JOIN LATERAL (
        -- A new stream (-4) is not looked for: a one-time filter, so no partition is read for it.
        SELECT e.stream_revision, e.transaction_id, e.event_id, e.kept_on FROM events e
         WHERE u.e <> -4 AND e.stream_id = u.s ORDER BY e.stream_revision DESC LIMIT 1
      ) h ON true
  ), judged AS (
    SELECT heads.*,
           (last_id = l OR (e = -1 AND current IS NOT NULL) OR (e = -3 AND current IS NULL)
             OR (e >= 0 AND current IS DISTINCT FROM e)) AS unexpected,
           -- Wrote before taking the lock, so older than the stream's last writer: a conflict (see 0001).
           coalesce(v_own_xid IS NOT NULL AND writer > v_own_xid, false) AS late
      FROM heads
  )
  SELECT array_agg(coalesce(current, -1) ORDER BY i),
         array_agg(coalesce(home, es_new_stream_home(s)) ORDER BY i),
         (array_agg(i ORDER BY i) FILTER (WHERE unexpected OR late))[1],
         (array_agg(unexpected ORDER BY i) FILTER (WHERE unexpected OR late))[1]
    INTO v_base, v_homes, v_bad, v_bad_unexpected FROM judged;

  IF v_bad IS NOT NULL THEN
    v_bad_current := nullif(v_base[v_bad], -1);
    IF v_bad_unexpected THEN
      RETURN QUERY SELECT * FROM es_already_appended(p_streams, p_events);
      IF FOUND THEN RETURN; END IF;
      RAISE EXCEPTION 'wrong expected revision for stream %', p_streams[v_bad] USING ERRCODE = 'ES409',
        DETAIL = json_build_object('stream', p_streams[v_bad], 'expected', p_expected[v_bad], 'actual', v_bad_current)::text;
    END IF;
    RAISE EXCEPTION 'transaction % wrote before appending to stream %, which a later transaction has since written', v_own_xid, p_streams[v_bad]
      USING ERRCODE = 'ES409',
      DETAIL = json_build_object('stream', p_streams[v_bad], 'expected', p_expected[v_bad], 'actual', v_bad_current)::text;
  END IF;

  RETURN QUERY
  WITH inserted AS (
    INSERT INTO events (event_id, stream_id, stream_revision, event_type, data, metadata, actor, team,
                        correlation_id, schema_version, kept_on)
    SELECT x.id, p_streams[x.s], v_base[x.s] + 1 + x.n, x.type, x.data, x.metadata, x.actor, x.team, x.cid, x.sv,
           v_homes[x.s]
      FROM json_to_recordset(p_events)
        AS x(s int, n bigint, id uuid, type text, data json, metadata json, actor text, team text, cid text, sv smallint)
    RETURNING stream_id, stream_revision, global_position
  )
    SELECT i.stream_id, max(i.stream_revision), pg_current_xact_id(), max(i.global_position)
      FROM inserted i GROUP BY i.stream_id;
END
$$;
