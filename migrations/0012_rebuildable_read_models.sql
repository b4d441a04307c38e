-- Read models that can be rebuilt beside the live ones and swapped in
-- (`npx chronicle projections rebuild`): the swap moves a live table to another
-- schema and drops it there, so no function may depend on a projection's
-- table itself. lock_and_read_runs returned SETOF runs, the table's row
-- type; it returns the columns its callers read instead, and finds `runs`
-- by name each time it runs, as every other statement does.
DROP FUNCTION lock_and_read_runs(text[]);

CREATE FUNCTION lock_and_read_runs(p_run_ids text[])
RETURNS TABLE (
  run_id text, job text, state text, revision bigint, definition jsonb, attempt integer, attempt_limit integer,
  available_at timestamptz, fencing_token bigint, worker_id text, leased_at timestamptz,
  lease_expires_at timestamptz, last_error text, death jsonb, discarded boolean
)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(stream_lock_key(run_stream_id(u.id)))
     FROM unnest(p_run_ids) AS u(id) ORDER BY run_stream_id(u.id);
  RETURN QUERY
    SELECT r.run_id::text, r.job::text, r.state, r.revision, r.definition, r.attempt, r.attempt_limit,
           r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death,
           r.discarded
      FROM runs r WHERE r.run_id = ANY(p_run_ids);
END
$$;
