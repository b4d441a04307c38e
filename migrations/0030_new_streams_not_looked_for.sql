-- Appending to a stream that is new by construction reads nothing of the log.
--
-- es_append looks for every stream's head before it writes: a stream expected
-- not to exist (-1) is looked for in every partition of `events`, to refuse it
-- when it does and to recognise a retry of an append that committed. A run
-- enqueued without an idempotency key gets a run id made for it (a UUIDv7),
-- whose stream cannot exist: the look is an index probe per partition for
-- nothing, once per new run. Such a stream is expected as -4 ("new stream",
-- ExpectedRevision 'new_stream'): not locked, not looked for, begun at
-- revision 0 in the partition a new stream begins in. A retry of such an
-- append is not recognised; the id was made for one append, so there is none.
--
-- Otherwise es_append is as in 0019.
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
    INSERT INTO events (event_id, stream_id, stream_revision, event_type, data, metadata, kept_on)
    SELECT x.id, p_streams[x.s], v_base[x.s] + 1 + x.n, x.type, x.data, coalesce(x.metadata, '{}'::json), v_homes[x.s]
      FROM json_to_recordset(p_events) AS x(s int, n bigint, id uuid, type text, data json, metadata json)
    RETURNING stream_id, stream_revision, global_position
  )
    SELECT i.stream_id, max(i.stream_revision), pg_current_xact_id(), max(i.global_position)
      FROM inserted i GROUP BY i.stream_id;
END
$$;
