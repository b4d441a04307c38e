-- The event log, kept by week: `events` is LIST-partitioned by
-- `kept_on`, the partition a stream's events live in, all of them together.
--
-- - Streams that end (runs' streams, `run-…`: es_stream_ends) begin in the
--   partition of the UTC week (its Monday) they were created in,
--   `events_wYYYYMMDD`. Retention (EventStore.expireStreams) drops a week's
--   partition as a whole once its streams are over, after moving the streams
--   that are not over yet into the current week's: a stream is never cut.
-- - Every other stream (jobs, teams, the platform's) lives in `events_kept`
--   ('infinity') and is never removed.
-- - A week without its partition goes to `events_unsorted` (the default), so
--   that no append ever fails; retention gives those rows their own partition.
--
-- A later event of a stream goes where the stream's head is (es_append reads
-- it there), so a stream's home changes only when retention moves it, under
-- the stream's lock. Positions (transaction_id, global_position) never change:
-- a move keeps them, and the global log reads the same across it.
--
-- Unique keys of a partitioned table must hold the partition key: (stream_id,
-- stream_revision) is unique per partition by its index, and across
-- partitions because every writer (es_append, a move) holds the stream's lock
-- and looks for its head in all of them.
--
-- The existing log becomes the current week's partition: on an upgraded
-- database its run streams are expired with that week, its other streams
-- moved to events_kept by the first expiry that reaches it.

-- Streams that end, as the event store has them (ENDING_STREAM_PREFIX in
-- libs/event-store): runs' streams.
CREATE FUNCTION es_stream_ends(p_stream text) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN starts_with(p_stream, 'run-');

-- Where a new stream begins.
CREATE FUNCTION es_new_stream_home(p_stream text) RETURNS date
  LANGUAGE sql VOLATILE PARALLEL SAFE
  RETURN CASE WHEN es_stream_ends(p_stream)
              THEN date_trunc('week', clock_timestamp() AT TIME ZONE 'UTC')::date
              ELSE 'infinity'::date END;

DO $$
DECLARE
  v_week date := date_trunc('week', clock_timestamp() AT TIME ZONE 'UTC')::date;
  v_next bigint;
BEGIN
  ALTER TABLE events RENAME TO events_legacy;
  ALTER TABLE events_legacy RENAME CONSTRAINT events_pkey TO events_legacy_pkey;
  ALTER TABLE events_legacy RENAME CONSTRAINT events_stream_revision_key TO events_legacy_stream_revision_key;
  -- An identity column cannot be one of a partitioned table's before PostgreSQL 17: a sequence of its
  -- own, going on from where the identity was.
  SELECT coalesce(max(global_position), 0) + 1 INTO v_next FROM events_legacy;
  ALTER TABLE events_legacy ALTER COLUMN global_position DROP IDENTITY;
  EXECUTE format('CREATE SEQUENCE events_global_position_seq AS bigint START WITH %s', v_next);
  EXECUTE format('ALTER TABLE events_legacy ADD COLUMN kept_on date NOT NULL DEFAULT %L', v_week);
  ALTER TABLE events_legacy ALTER COLUMN kept_on DROP DEFAULT;
  EXECUTE format('ALTER TABLE events_legacy ADD CONSTRAINT events_legacy_week CHECK (kept_on = %L)', v_week);

  CREATE TABLE events (
    global_position bigint NOT NULL DEFAULT nextval('events_global_position_seq'),
    transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
    event_id        uuid NOT NULL,
    -- The checks named as 0001's are, so that the old table attaches with its own.
    stream_id       text COLLATE "C" NOT NULL CONSTRAINT events_stream_id_check CHECK (stream_id <> ''),
    stream_revision bigint NOT NULL CONSTRAINT events_stream_revision_check CHECK (stream_revision >= 0),
    event_type      text NOT NULL CONSTRAINT events_event_type_check CHECK (event_type <> ''),
    data            json NOT NULL,
    metadata        json NOT NULL DEFAULT '{}',
    recorded_at     timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
    -- 'infinity' (kept) for a row written without es_append.
    kept_on         date NOT NULL DEFAULT 'infinity',
    CONSTRAINT events_stream_revision_key UNIQUE (stream_id, stream_revision, kept_on),
    CONSTRAINT events_pkey PRIMARY KEY (transaction_id, global_position, kept_on)
  ) PARTITION BY LIST (kept_on);
  ALTER SEQUENCE events_global_position_seq OWNED BY events.global_position;

  CREATE TABLE events_kept PARTITION OF events FOR VALUES IN ('infinity');
  CREATE TABLE events_unsorted PARTITION OF events DEFAULT;
  ALTER TABLE events_legacy DROP CONSTRAINT events_legacy_pkey, DROP CONSTRAINT events_legacy_stream_revision_key;
  EXECUTE format('ALTER TABLE events_legacy RENAME TO %I', 'events_w' || to_char(v_week, 'YYYYMMDD'));
  EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES IN (%L)', 'events_w' || to_char(v_week, 'YYYYMMDD'), v_week);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT events_legacy_week', 'events_w' || to_char(v_week, 'YYYYMMDD'));
  FOR i IN 1..2 LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES IN (%L)',
                   'events_w' || to_char(v_week + 7 * i, 'YYYYMMDD'), v_week + 7 * i);
  END LOOP;
END
$$;

-- es_append as in 0011, and a stream's new events go where its head is (a new
-- stream: es_new_stream_home). The head is looked for in every partition.
CREATE OR REPLACE FUNCTION es_append(p_streams text[], p_expected bigint[], p_last_ids uuid[], p_events json)
RETURNS TABLE (r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_base bigint[];
  v_homes date[];
  v_bad bigint;
  v_bad_current bigint;
  v_bad_unexpected boolean;
  v_own_xid xid8 := pg_current_xact_id_if_assigned();
BEGIN
  -- Lock first, write later (see 0001): sorted, and none for a stream expected not to exist.
  PERFORM pg_advisory_xact_lock(stream_lock_key(u.s))
     FROM unnest(p_streams, p_expected) AS u(s, e) WHERE u.e <> -1 ORDER BY u.s;

  WITH heads AS (
    SELECT u.i, u.s, u.e, u.l, h.stream_revision AS current, h.transaction_id AS writer, h.event_id AS last_id,
           h.kept_on AS home
      FROM unnest(p_streams, p_expected, p_last_ids) WITH ORDINALITY AS u(s, e, l, i)
      LEFT JOIN LATERAL (
        SELECT e.stream_revision, e.transaction_id, e.event_id, e.kept_on FROM events e
         WHERE e.stream_id = u.s ORDER BY e.stream_revision DESC LIMIT 1
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
    INSERT INTO events (event_id, stream_id, stream_revision, event_type, data, metadata, kept_on)
    SELECT x.id, p_streams[x.s], v_base[x.s] + 1 + x.n, x.type, x.data, coalesce(x.metadata, '{}'::json), v_homes[x.s]
      FROM json_to_recordset(p_events) AS x(s int, n bigint, id uuid, type text, data json, metadata json)
    RETURNING stream_id, stream_revision, global_position
  )
    SELECT i.stream_id, max(i.stream_revision), pg_current_xact_id(), max(i.global_position)
      FROM inserted i GROUP BY i.stream_id;
END
$$;
