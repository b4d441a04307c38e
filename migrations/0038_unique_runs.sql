-- Unique runs (docs/api.md, "Unique runs"): a run enqueued with a unique key holds it by its job's rule,
-- and an enqueue naming a key that a run holds answers with that run. The key is a column of the run's
-- row, written with it from its RunScheduled (as the rest of the row: by the projection code, so a
-- rebuild from the log writes it again), with, for a rule of a time, until when the run holds it.
-- The index holds the runs with a key only: a run without one costs nothing, and a transition changes
-- neither column, so it stays an in-place update.

ALTER TABLE runs ADD COLUMN unique_key text, ADD COLUMN unique_until timestamptz;
CREATE INDEX runs_unique_idx ON runs (job, unique_key) WHERE unique_key IS NOT NULL;
