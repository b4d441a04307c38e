-- The event log: the source of truth. Append-only; rows are never updated.
--
-- global_position orders rows by insertion, transaction_id by the writing
-- transaction. Readers of the global log order by (transaction_id,
-- global_position) and only read transactions older than the oldest one still
-- running (pg_snapshot_xmin), so an event that commits late is never skipped.
CREATE TABLE events (
  global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
  event_id        uuid NOT NULL,
  stream_id       text NOT NULL CHECK (stream_id <> ''),
  stream_revision bigint NOT NULL CHECK (stream_revision >= 0),
  event_type      text NOT NULL CHECK (event_type <> ''),
  data            jsonb NOT NULL,
  metadata        jsonb NOT NULL DEFAULT '{}',
  -- clock_timestamp, not now(): the stream lock is taken inside the
  -- transaction, so the transaction's start time could be older than the
  -- previous revision's. Milliseconds, as clients (JavaScript dates) see them,
  -- so that an as-of read with a time taken from an event includes it.
  recorded_at     timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  -- Optimistic concurrency: exactly one writer wins each revision.
  CONSTRAINT events_stream_revision_key UNIQUE (stream_id, stream_revision),
  -- Idempotent retries: the same event id is never written twice.
  CONSTRAINT events_event_id_key UNIQUE (event_id)
);

-- The global read: a range scan in commit order from a checkpoint.
CREATE INDEX events_global_order_idx ON events (transaction_id, global_position);

-- Append events to one or more streams, atomically, with an expected revision
-- per stream. One round trip per call, whatever the number of events.
--
--   p_streams   distinct stream ids
--   p_expected  per stream: >= 0 exact revision, -1 no stream, -2 any, -3 stream exists
--   p_events    JSON array of {"s": stream index (1-based), "id", "type", "data", "metadata"}
--
-- Returns the last revision and position written per stream. Raises SQLSTATE
-- ES409 with a JSON detail when a stream is not at its expected revision.
CREATE FUNCTION es_append(p_streams text[], p_expected bigint[], p_events jsonb)
RETURNS TABLE (r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_base bigint[] := '{}';
  v_current bigint;
  v_last_writer xid8;
  v_own_xid xid8 := pg_current_xact_id_if_assigned();
  v_total int := jsonb_array_length(p_events);
  v_existing int;
  v_matching int;
BEGIN
  -- Lock first, write later. A transaction gets its id at its first write;
  -- taking every stream's lock before writing anything means that of two
  -- appends to one stream the later one always has the later transaction id,
  -- so the global order never shows revision n+1 before revision n. Sorted,
  -- so that two multi-stream appends cannot deadlock.
  PERFORM pg_advisory_xact_lock(hashtextextended(s, 0))
     FROM unnest(p_streams) AS s ORDER BY s;

  -- A retry of an append that already committed: succeed with what is there.
  SELECT count(*), count(*) FILTER (WHERE e.stream_id = p_streams[(x.value->>'s')::int])
    INTO v_existing, v_matching
    FROM jsonb_array_elements(p_events) AS x
    JOIN events e ON e.event_id = (x.value->>'id')::uuid;
  IF v_existing > 0 THEN
    IF v_matching = v_total THEN
      RETURN QUERY
        SELECT DISTINCT ON (e.stream_id) e.stream_id, e.stream_revision, e.transaction_id, e.global_position
          FROM events e
         WHERE e.event_id IN (SELECT (x.value->>'id')::uuid FROM jsonb_array_elements(p_events) AS x)
         ORDER BY e.stream_id, e.global_position DESC;
      RETURN;
    END IF;
    RAISE EXCEPTION 'event ids already written elsewhere' USING ERRCODE = 'ES409',
      DETAIL = json_build_object('stream', p_streams[1], 'expected', p_expected[1], 'actual', NULL)::text;
  END IF;

  FOR i IN 1 .. cardinality(p_streams) LOOP
    -- One backward probe of events_stream_revision_key.
    SELECT e.stream_revision, e.transaction_id INTO v_current, v_last_writer
      FROM events e WHERE e.stream_id = p_streams[i]
     ORDER BY e.stream_revision DESC LIMIT 1;
    -- This transaction wrote something before taking the lock, so it has an
    -- id older than the stream's last writer: its events would sort before
    -- earlier revisions. Refuse as a conflict; a retry gets a fresh id.
    IF v_own_xid IS NOT NULL AND v_last_writer > v_own_xid THEN
      RAISE EXCEPTION 'transaction % wrote before appending to stream %, which a later transaction has since written', v_own_xid, p_streams[i]
        USING ERRCODE = 'ES409',
        DETAIL = json_build_object('stream', p_streams[i], 'expected', p_expected[i], 'actual', v_current)::text;
    END IF;
    IF (p_expected[i] = -1 AND v_current IS NOT NULL)
       OR (p_expected[i] = -3 AND v_current IS NULL)
       OR (p_expected[i] >= 0 AND v_current IS DISTINCT FROM p_expected[i]) THEN
      RAISE EXCEPTION 'wrong expected revision for stream %', p_streams[i] USING ERRCODE = 'ES409',
        DETAIL = json_build_object('stream', p_streams[i], 'expected', p_expected[i], 'actual', v_current)::text;
    END IF;
    v_base := v_base || coalesce(v_current, -1);
  END LOOP;

  RETURN QUERY
    WITH inserted AS (
      INSERT INTO events (event_id, stream_id, stream_revision, event_type, data, metadata)
      SELECT (x.value->>'id')::uuid,
             p_streams[(x.value->>'s')::int],
             v_base[(x.value->>'s')::int] + row_number() OVER (PARTITION BY x.value->>'s' ORDER BY x.ord),
             x.value->>'type',
             x.value->'data',
             coalesce(x.value->'metadata', '{}')
        FROM jsonb_array_elements(p_events) WITH ORDINALITY AS x(value, ord)
       ORDER BY x.ord
      RETURNING stream_id, stream_revision, transaction_id, global_position
    )
    SELECT DISTINCT ON (i.stream_id) i.stream_id, i.stream_revision, i.transaction_id, i.global_position
      FROM inserted i
     ORDER BY i.stream_id, i.global_position DESC;
END
$$;
