-- The materialiser's due index. Each pass used to read every scheduled job;
-- at 50,000 hourly jobs that is 50,000 rows a second to find the few due.
-- Now a cursor also holds the nominal time of the job's next fire after it,
-- and a pass reads only the cursors due within the lookahead, by index.
--
--   next_fire_at  NULL: nothing to materialise (no schedule, paused, or a
--                 schedule that never fires again); '-infinity': look at the
--                 job on the next pass (new, changed or resumed: written
--                 with the job's row, see libs/projections/src/jobs.sql.ts).
--   materialised_through  NULL: never materialised (the schedule starts now).
ALTER TABLE schedule_cursors
  ALTER COLUMN materialised_through DROP NOT NULL,
  ADD COLUMN next_fire_at timestamptz;

UPDATE schedule_cursors SET next_fire_at = '-infinity';

INSERT INTO schedule_cursors (job, materialised_through, next_fire_at)
SELECT name, NULL, '-infinity' FROM jobs
 WHERE jsonb_typeof(definition->'schedule') = 'object' AND NOT paused
ON CONFLICT (job) DO NOTHING;

CREATE INDEX schedule_cursors_due_idx ON schedule_cursors (next_fire_at) WHERE next_fire_at IS NOT NULL;
