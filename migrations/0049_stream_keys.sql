-- The log's stream key in bytes. A run's stream `run-run_<32 hex digits>` is 41 characters, written in
-- every event's row and in every entry of events_stream_revision_key, a run's two to four events each
-- time. Kept as a zero byte and the run id's 16 bytes instead (17 bytes), and every other stream as its
-- name's UTF-8 bytes (which never begin with a zero byte: no text holds one, and appends refuse one), the
-- log keeps 24 bytes less in each of those copies, with fewer page splits of the key, and the name is
-- given back exactly as written.
--
-- The adapter still speaks stream names. es_stream_key and es_stream_name turn one into the other for
-- the statements that need it; both are inlined into them (a call of its own costs microseconds an
-- event), so neither is STRICT, and both are STABLE, as convert_to and convert_from are. The hot paths
-- pass keys the adapter made (stream-key.ts): the regular expression here costs microseconds a name.
--
-- Rewrites `events` (all its partitions) and its key once, under the table's lock.

CREATE FUNCTION es_stream_key(p_stream text) RETURNS bytea
  LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN length(p_stream) = 40 AND starts_with(p_stream, 'run-run_') AND substr(p_stream, 9) ~ '^[0-9a-f]{32}$'
            THEN '\x00'::bytea || decode(substr(p_stream, 9), 'hex')
            ELSE convert_to(p_stream, 'UTF8') END;

CREATE FUNCTION es_stream_name(p_key bytea) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN get_byte(p_key, 0) = 0 THEN 'run-run_' || encode(substr(p_key, 2), 'hex')
            ELSE convert_from(p_key, 'UTF8') END;

ALTER TABLE events DROP CONSTRAINT events_stream_revision_key;
ALTER TABLE events DROP CONSTRAINT events_stream_id_check;
ALTER TABLE events RENAME COLUMN stream_id TO stream_key;
ALTER TABLE events ALTER COLUMN stream_key TYPE bytea USING es_stream_key(stream_key);
ALTER TABLE events ADD CONSTRAINT events_stream_key_check CHECK (length(stream_key) > 0);
ALTER TABLE events ADD CONSTRAINT events_stream_revision_key UNIQUE (stream_key, stream_revision, kept_on);

CREATE OR REPLACE FUNCTION es_already_appended(p_streams text[], p_events json)
 RETURNS TABLE(r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
 LANGUAGE sql
 STABLE
AS $function$
  WITH wanted AS (
    SELECT x.id, es_stream_key(p_streams[x.s]) AS stream_key FROM json_to_recordset(p_events) AS x(s int, id uuid)
  ), found AS (
    SELECT e.stream_key, e.stream_revision, e.transaction_id, e.global_position
      FROM wanted w JOIN events e ON e.stream_key = w.stream_key AND e.event_id = w.id
  )
  SELECT DISTINCT ON (f.stream_key) es_stream_name(f.stream_key), f.stream_revision, f.transaction_id, f.global_position
    FROM found f
   WHERE (SELECT count(*) FROM found) = (SELECT count(*) FROM wanted)
   ORDER BY f.stream_key, f.global_position DESC
$function$;

-- es_append takes each stream's key beside its name (the adapter makes them, stream-key.ts): the name for
-- the stream's lock, its partition and what is reported, the key for its head and its rows.
DROP FUNCTION es_append(text[], bigint[], uuid[], json);
CREATE FUNCTION es_append(p_streams text[], p_keys bytea[], p_expected bigint[], p_last_ids uuid[], p_events json)
 RETURNS TABLE(r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_base bigint[];
  v_homes date[];
  v_bad bigint;
  v_bad_current bigint;
  v_bad_unexpected boolean;
  v_own_xid xid8 := pg_current_xact_id_if_assigned();
BEGIN
  -- The shard fence (0034): shared with every other append, exclusive for a move's fence.
  PERFORM pg_advisory_xact_lock_shared(chronicle_shard_fence_key());
  IF EXISTS (SELECT 1 FROM moving_shards WHERE direction = 'out') THEN
    PERFORM chronicle_refuse_moving_out(p_streams, p_events);
  END IF;

  -- Lock first, write later (see 0001): sorted, and none for a stream expected not to exist.
  PERFORM pg_advisory_xact_lock(stream_lock_key(u.s))
     FROM unnest(p_streams, p_expected) AS u(s, e) WHERE u.e >= -3 AND u.e <> -1 ORDER BY u.s;

  WITH heads AS (
    SELECT u.i, u.s, u.k, u.e, u.l, h.stream_revision AS current, h.transaction_id AS writer, h.event_id AS last_id,
           h.kept_on AS home
      FROM unnest(p_streams, p_keys, p_expected, p_last_ids) WITH ORDINALITY AS u(s, k, e, l, i)
      LEFT JOIN LATERAL (
        -- A new stream (-4) is not looked for: a one-time filter, so no partition is read for it.
        SELECT e.stream_revision, e.transaction_id, e.event_id, e.kept_on FROM events e
         WHERE u.e <> -4 AND e.stream_key = u.k ORDER BY e.stream_revision DESC LIMIT 1
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
    INSERT INTO events (event_id, stream_key, stream_revision, event_type, data, metadata, actor, team,
                        correlation_id, correlation_uuid, schema_version, kept_on)
    SELECT x.id, p_keys[x.s], v_base[x.s] + 1 + x.n, x.type, x.data, x.metadata, x.actor, x.team, x.cid, x.cu, x.sv,
           v_homes[x.s]
      FROM json_to_recordset(p_events)
        AS x(s int, n bigint, id uuid, type text, data json, metadata json, actor text, team text, cid text, cu uuid, sv smallint)
    RETURNING stream_key, stream_revision, global_position
  )
    SELECT es_stream_name(i.stream_key), max(i.stream_revision), pg_current_xact_id(), max(i.global_position)
      FROM inserted i GROUP BY i.stream_key;
END
$function$;
