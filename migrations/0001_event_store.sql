-- The event log: the source of truth. Append-only; rows are never updated.
--
-- global_position orders rows by insertion, transaction_id by the writing
-- transaction. Readers of the global log order by (transaction_id,
-- global_position) and only read transactions older than the oldest one still
-- running (pg_snapshot_xmin), so an event that commits late is never skipped.
CREATE TABLE events (
  global_position bigint GENERATED ALWAYS AS IDENTITY,
  transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
  event_id        uuid NOT NULL,
  -- "C": byte order, the cheapest comparison for the (stream, revision) index.
  stream_id       text COLLATE "C" NOT NULL CHECK (stream_id <> ''),
  stream_revision bigint NOT NULL CHECK (stream_revision >= 0),
  event_type      text NOT NULL CHECK (event_type <> ''),
  -- json, not jsonb: kept exactly as written (an audit log should), and
  -- stored without conversion; nothing queries inside events in SQL.
  data            json NOT NULL,
  metadata        json NOT NULL DEFAULT '{}',
  -- clock_timestamp, not now(): the stream lock is taken inside the
  -- transaction, so the transaction's start time could be older than the
  -- previous revision's. Milliseconds, as clients (JavaScript dates) see them,
  -- so that an as-of read with a time taken from an event includes it.
  recorded_at     timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  -- Optimistic concurrency: exactly one writer wins each revision. Retries are
  -- recognised by event id within the stream (as KurrentDB does), through this
  -- index too: no index of its own on event_id, one less per insert.
  CONSTRAINT events_stream_revision_key UNIQUE (stream_id, stream_revision),
  -- The global read, a range scan in commit order from a checkpoint. As the
  -- key it is also the only index on global_position: one less per insert.
  CONSTRAINT events_pkey PRIMARY KEY (transaction_id, global_position)
);

-- The result of an append that already committed: when every event id of
-- p_events is in the stream it was meant for, the last revision and position
-- per stream; otherwise no rows. Scans the streams' events (by
-- events_stream_revision_key); it runs only when an append looks like a retry.
CREATE FUNCTION es_already_appended(p_streams text[], p_events json)
RETURNS TABLE (r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
LANGUAGE sql STABLE AS $$
  WITH wanted AS (
    SELECT x.id, p_streams[x.s] AS stream_id FROM json_to_recordset(p_events) AS x(s int, id uuid)
  ), found AS (
    SELECT e.stream_id, e.stream_revision, e.transaction_id, e.global_position
      FROM wanted w JOIN events e ON e.stream_id = w.stream_id AND e.event_id = w.id
  )
  SELECT DISTINCT ON (f.stream_id) f.stream_id, f.stream_revision, f.transaction_id, f.global_position
    FROM found f
   WHERE (SELECT count(*) FROM found) = (SELECT count(*) FROM wanted)
   ORDER BY f.stream_id, f.global_position DESC
$$;

-- Append events to one or more streams, atomically, with an expected revision
-- per stream. One round trip per call, whatever the number of events.
--
--   p_streams   distinct stream ids
--   p_expected  per stream: >= 0 exact revision, -1 no stream, -2 any, -3 stream exists
--   p_last_ids  per stream: the id of its last event in p_events
--   p_events    JSON array of {"s": stream index (1-based), "n": index within
--               that stream's events (from 0), "id", "type", "data", "metadata"}
--
-- Returns the last revision and position written per stream. Raises SQLSTATE
-- ES409 with a JSON detail when a stream is not at its expected revision.
-- A retry of an append that already committed (the same event ids, in the
-- same streams) succeeds with what is there. It is recognised when a stream
-- already ends with the append's last event, or when the expected revision
-- does not match: the normal path pays one compared uuid for it.
CREATE FUNCTION es_append(p_streams text[], p_expected bigint[], p_last_ids uuid[], p_events json)
RETURNS TABLE (r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_base bigint[] := '{}';
  v_current bigint;
  v_last_writer xid8;
  v_last_id uuid;
  v_own_xid xid8 := pg_current_xact_id_if_assigned();
BEGIN
  -- Lock first, write later. A transaction gets its id at its first write;
  -- taking every stream's lock before writing anything means that of two
  -- appends to one stream the later one always has the later transaction id,
  -- so the global order never shows revision n+1 before revision n. Sorted,
  -- so that two multi-stream appends cannot deadlock. A stream expected not
  -- to exist needs no lock: whoever appends to it next does so after this
  -- transaction committed, so with a later id; two creators meet at the
  -- unique (stream, revision) key. That keeps a 1,000-run batch enqueue from
  -- taking 1,000 locks.
  PERFORM pg_advisory_xact_lock(hashtextextended(u.s, 0))
     FROM unnest(p_streams, p_expected) AS u(s, e) WHERE u.e <> -1 ORDER BY u.s;

  FOR i IN 1 .. cardinality(p_streams) LOOP
    -- One backward probe of events_stream_revision_key.
    SELECT e.stream_revision, e.transaction_id, e.event_id INTO v_current, v_last_writer, v_last_id
      FROM events e WHERE e.stream_id = p_streams[i]
     ORDER BY e.stream_revision DESC LIMIT 1;
    IF v_last_id = p_last_ids[i]
       OR (p_expected[i] = -1 AND v_current IS NOT NULL)
       OR (p_expected[i] = -3 AND v_current IS NULL)
       OR (p_expected[i] >= 0 AND v_current IS DISTINCT FROM p_expected[i]) THEN
      RETURN QUERY SELECT * FROM es_already_appended(p_streams, p_events);
      IF FOUND THEN RETURN; END IF;
      RAISE EXCEPTION 'wrong expected revision for stream %', p_streams[i] USING ERRCODE = 'ES409',
        DETAIL = json_build_object('stream', p_streams[i], 'expected', p_expected[i], 'actual', v_current)::text;
    END IF;
    -- This transaction wrote something before taking the lock, so it has an
    -- id older than the stream's last writer: its events would sort before
    -- earlier revisions. Refuse as a conflict; a retry gets a fresh id.
    IF v_own_xid IS NOT NULL AND v_last_writer > v_own_xid THEN
      RAISE EXCEPTION 'transaction % wrote before appending to stream %, which a later transaction has since written', v_own_xid, p_streams[i]
        USING ERRCODE = 'ES409',
        DETAIL = json_build_object('stream', p_streams[i], 'expected', p_expected[i], 'actual', v_current)::text;
    END IF;
    v_base := v_base || coalesce(v_current, -1);
  END LOOP;

  -- The client numbers each event within its stream ("n", from 0), so the
  -- revision is plain arithmetic: no window, no sort. data and metadata are
  -- slices of the argument's text, stored as they are.
  RETURN QUERY
  WITH inserted AS (
    INSERT INTO events (event_id, stream_id, stream_revision, event_type, data, metadata)
    SELECT x.id, p_streams[x.s], v_base[x.s] + 1 + x.n, x.type, x.data, coalesce(x.metadata, '{}'::json)
      -- One pass over the text, in array order (a function scan is sequential):
      -- positions follow it.
      FROM json_to_recordset(p_events) AS x(s int, n bigint, id uuid, type text, data json, metadata json)
    RETURNING stream_id, stream_revision, global_position
  )
    SELECT i.stream_id, max(i.stream_revision), pg_current_xact_id(), max(i.global_position)
      FROM inserted i GROUP BY i.stream_id;
END
$$;
