-- The advisory-lock keys of streams, written once. es_append locks a stream
-- by stream_lock_key(stream id); the command side's SQL takes the same lock
-- on a run by run_lock_key(run id) before deciding for it, so the two
-- always meet. run_lock_key mirrors runStreamId in libs/domain (streams.ts);
-- sql-mirrors-domain.int-spec.ts checks that they agree.
CREATE FUNCTION stream_lock_key(p_stream_id text) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN hashtextextended(p_stream_id, 0);

CREATE FUNCTION run_lock_key(p_run_id text) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN stream_lock_key('run-' || p_run_id);

-- es_append takes its locks through stream_lock_key. Its definition is
-- rewritten in place rather than repeated here: the one change is the lock
-- expression, and the migration refuses to run if it is not found.
DO $$
DECLARE
  v_def text := pg_get_functiondef('es_append(text[], bigint[], uuid[], json)'::regprocedure);
  v_old constant text := 'pg_advisory_xact_lock(hashtextextended(u.s, 0))';
BEGIN
  IF position(v_old IN v_def) = 0 THEN
    RAISE EXCEPTION 'es_append does not lock streams by %', v_old;
  END IF;
  EXECUTE replace(v_def, v_old, 'pg_advisory_xact_lock(stream_lock_key(u.s))');
END
$$;

-- A job's overlap policy, with its default (DEFAULT_OVERLAP_POLICY in
-- libs/domain, which sql-mirrors-domain.int-spec.ts checks against this), for the
-- run limit below and the scheduler's overlap pass.
CREATE FUNCTION job_overlap_policy(p_definition jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN coalesce(p_definition->'schedule'->>'overlapPolicy', 'buffer_one');

-- run_limit (0008) again, through job_overlap_policy: the default is no
-- longer written into the column's expression.
ALTER TABLE jobs DROP COLUMN run_limit CASCADE;
ALTER TABLE jobs ADD COLUMN run_limit integer GENERATED ALWAYS AS (
  CASE
    WHEN jsonb_typeof(definition->'schedule') = 'object' AND job_overlap_policy(definition) <> 'allow_all' THEN 1
    ELSE (definition->>'concurrency')::integer
  END
) STORED;
CREATE INDEX jobs_limited_idx ON jobs (((definition->>'queue')), name) WHERE run_limit IS NOT NULL;
