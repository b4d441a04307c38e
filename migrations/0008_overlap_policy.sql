-- How many runs of a job may be leased at once, as the claim enforces it:
-- the job's `concurrency`, and 1 for a scheduled job whose overlap policy
-- keeps fires from overlapping (every policy but allow_all; buffer_one is
-- the default). NULL: no limit. Derived from the definition, so it cannot
-- drift from it.
ALTER TABLE jobs ADD COLUMN run_limit integer GENERATED ALWAYS AS (
  CASE
    WHEN jsonb_typeof(definition->'schedule') = 'object'
         AND coalesce(definition->'schedule'->>'overlapPolicy', 'buffer_one') <> 'allow_all'
      THEN 1
    ELSE (definition->>'concurrency')::integer
  END
) STORED;

DROP INDEX jobs_limited_idx;
CREATE INDEX jobs_limited_idx ON jobs (((definition->>'queue')), name) WHERE run_limit IS NOT NULL;
