-- The write path, leaner.
--
-- es_append, set-based: the head of every stream is found in one statement
-- (one probe of events_stream_revision_key per stream, not one PL/pgSQL
-- query each), and the first stream that is not where the append expects it
-- is reported as before. Same arguments, results, locks and errors as 0001
-- (with 0010's stream_lock_key).
CREATE OR REPLACE FUNCTION es_append(p_streams text[], p_expected bigint[], p_last_ids uuid[], p_events json)
RETURNS TABLE (r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_base bigint[];
  v_bad bigint;
  v_bad_current bigint;
  v_bad_unexpected boolean;
  v_own_xid xid8 := pg_current_xact_id_if_assigned();
BEGIN
  -- Lock first, write later (see 0001): sorted, and none for a stream expected not to exist.
  PERFORM pg_advisory_xact_lock(stream_lock_key(u.s))
     FROM unnest(p_streams, p_expected) AS u(s, e) WHERE u.e <> -1 ORDER BY u.s;

  WITH heads AS (
    SELECT u.i, u.e, u.l, h.stream_revision AS current, h.transaction_id AS writer, h.event_id AS last_id
      FROM unnest(p_streams, p_expected, p_last_ids) WITH ORDINALITY AS u(s, e, l, i)
      LEFT JOIN LATERAL (
        SELECT e.stream_revision, e.transaction_id, e.event_id FROM events e
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
         (array_agg(i ORDER BY i) FILTER (WHERE unexpected OR late))[1],
         (array_agg(unexpected ORDER BY i) FILTER (WHERE unexpected OR late))[1]
    INTO v_base, v_bad, v_bad_unexpected FROM judged;

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
    INSERT INTO events (event_id, stream_id, stream_revision, event_type, data, metadata)
    SELECT x.id, p_streams[x.s], v_base[x.s] + 1 + x.n, x.type, x.data, coalesce(x.metadata, '{}'::json)
      FROM json_to_recordset(p_events) AS x(s int, n bigint, id uuid, type text, data json, metadata json)
    RETURNING stream_id, stream_revision, global_position
  )
    SELECT i.stream_id, max(i.stream_revision), pg_current_xact_id(), max(i.global_position)
      FROM inserted i GROUP BY i.stream_id;
END
$$;

-- Run streams are no longer kept in stream_activity (the runs read model has
-- their revision, state and time): the projection's version 2 rebuilds it.
DELETE FROM stream_activity WHERE category = 'run';

-- The runs row, lean: the decider's state in columns, the run's definition
-- (payload included) in a column written once at scheduling and never again.
-- Until now every transition rewrote the whole state as one jsonb snapshot,
-- definition and payload included: the bytes of a lease or a completion were
-- mostly a copy of what had not changed. Reads build the state from the
-- columns (runFromRow in libs/projections/src/runs/runs.sql.ts).
ALTER TABLE runs
  ADD COLUMN definition    jsonb,
  ADD COLUMN attempt_limit integer,
  ADD COLUMN fencing_token bigint,
  ADD COLUMN worker_id     text,
  ADD COLUMN leased_at     timestamptz,
  ADD COLUMN last_error    text,
  ADD COLUMN death         jsonb;
UPDATE runs SET
  definition    = snapshot->'definition',
  attempt_limit = (snapshot->>'attemptLimit')::integer,
  fencing_token = (snapshot->'lease'->>'fencingToken')::bigint,
  worker_id     = snapshot->'lease'->>'workerId',
  leased_at     = (snapshot->'lease'->>'leasedAt')::timestamptz,
  last_error    = snapshot->>'lastError',
  death         = nullif(snapshot->'death', 'null'::jsonb);
ALTER TABLE runs
  ALTER COLUMN definition SET NOT NULL,
  ALTER COLUMN attempt_limit SET NOT NULL,
  DROP COLUMN snapshot;

-- A run's stream id, in SQL as runStreamId in libs/domain (streams.ts) has
-- it; run_lock_key now goes through it. sql-mirrors-domain.int-spec.ts
-- checks that they agree.
CREATE FUNCTION run_stream_id(p_run_id text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN 'run-' || p_run_id;

CREATE OR REPLACE FUNCTION run_lock_key(p_run_id text) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN stream_lock_key(run_stream_id(p_run_id));

-- A decision's first round trip, one instead of two: take the runs' stream
-- locks (blocking, in stream id order, as es_append takes them, so that two
-- batches cannot deadlock), then read their rows. VOLATILE and PL/pgSQL:
-- the read is a statement of its own with a snapshot taken after the locks
-- were granted, so it sees every write committed by the lock's last holder.
CREATE FUNCTION lock_and_read_runs(p_run_ids text[]) RETURNS SETOF runs
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(stream_lock_key(run_stream_id(u.id)))
     FROM unnest(p_run_ids) AS u(id) ORDER BY run_stream_id(u.id);
  RETURN QUERY SELECT * FROM runs WHERE run_id = ANY(p_run_ids);
END
$$;

-- Every transition leaves a dead version of its run's row (no HOT update:
-- the state is in the partial indexes' predicates). With the defaults,
-- autovacuum waits for a fifth of the table to be dead; on a table of
-- millions of runs that is a long pile of dead tuples at the head of the
-- claim index. Vacuum runs early and without the cost delay instead, so
-- dead tuples stay bounded under sustained load (npm run bench -- --soak).
ALTER TABLE runs SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 2000,
  autovacuum_vacuum_cost_delay = 0,
  autovacuum_analyze_scale_factor = 0.02
);
-- A handful of rows updated after every batch of the projector.
ALTER TABLE projection_checkpoints SET (autovacuum_vacuum_threshold = 500, autovacuum_vacuum_cost_delay = 0);
