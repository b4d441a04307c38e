-- A run's definition (its RunScheduled: payload, retry policy, timeout, idempotency key) is written once,
-- with the run's other write-once facts in `run_listing`, and no longer in its `runs` row.
--
-- Every transition rewrites the run's `runs` row (a new row version, and its bytes in the WAL). With the
-- definition in it, a row was about 700 bytes, and a drained run (leased, then succeeded) wrote two
-- of them: 1,425 of the 3,750 WAL bytes the run cost. `run_listing` has a row per run already, written
-- once as the run is created, in the same partition (the run's due day, or the kept runs) and moved
-- with it by retention: the definition goes there, and `runs` keeps the state a transition changes.
--
-- On a database with many kept runs this migration rewrites every `run_listing` row once (the UPDATE
-- below), holding its lock meanwhile: the listings wait for it. `runs` keeps the old column's bytes in
-- its existing rows until they are next written or vacuumed full; rows written from now on are lean.
ALTER TABLE run_listing ADD COLUMN definition jsonb;

UPDATE run_listing l SET definition = r.definition
  FROM runs r WHERE r.run_id = l.run_id AND r.kept_on = l.kept_on;

-- A listing row whose run is gone (none are written so) has nothing to list.
DELETE FROM run_listing WHERE definition IS NULL;

ALTER TABLE run_listing ALTER COLUMN definition SET NOT NULL;

-- Retention's question of a stored payload: does a kept run still refer to it?
DROP INDEX runs_payload_ref_idx;
CREATE INDEX run_listing_payload_ref_idx ON run_listing (((definition -> 'payloadRef') ->> 'sha256'))
  WHERE definition ? 'payloadRef';

-- A decision's first round trip (0025) with the definition from the run's listing row: one probe of its key
-- in the same partition.
CREATE OR REPLACE FUNCTION lock_and_read_runs(p_run_ids text[])
RETURNS TABLE (
  run_id text, job text, state text, revision bigint, definition jsonb, attempt integer, attempt_limit integer,
  available_at timestamptz, fencing_token bigint, worker_id text, leased_at timestamptz,
  lease_expires_at timestamptz, last_error text, death jsonb, discarded boolean, finished_at timestamptz
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_found integer;
  v_today date := (now() AT TIME ZONE 'UTC')::date;
  v_recent date[] := ARRAY[v_today - 1, v_today, v_today + 1, 'infinity'::date];
BEGIN
  PERFORM pg_advisory_xact_lock(stream_lock_key(run_stream_id(u.id)))
     FROM unnest(p_run_ids) AS u(id) ORDER BY run_stream_id(u.id);
  RETURN QUERY
    SELECT r.run_id::text, r.job::text, r.state, r.revision,
           (SELECT l.definition FROM run_listing l WHERE l.run_id = r.run_id AND l.kept_on = r.kept_on),
           r.attempt, r.attempt_limit,
           r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death,
           r.discarded, r.finished_at
      FROM runs r WHERE r.kept_on = ANY(v_recent) AND r.run_id = ANY(p_run_ids);
  GET DIAGNOSTICS v_found = ROW_COUNT;
  IF v_found < cardinality(p_run_ids) THEN
    RETURN QUERY
      SELECT r.run_id::text, r.job::text, r.state, r.revision,
             (SELECT l.definition FROM run_listing l WHERE l.run_id = r.run_id AND l.kept_on = r.kept_on),
             r.attempt, r.attempt_limit,
             r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death,
             r.discarded, r.finished_at
        FROM runs r WHERE r.kept_on <> ALL(v_recent) AND r.run_id = ANY(p_run_ids);
  END IF;
END
$$;

ALTER TABLE runs DROP COLUMN definition;
