-- Unique runs (docs/api.md, "Unique runs"): a run enqueued with a unique key holds it by its job's rule,
-- and an enqueue naming a key that a run holds answers with that run. The row of a run keeps its key while
-- the run may hold it (`unique_key`: under a rule of states, while its state says so; under a rule of a
-- time, always, with `unique_until`), written with the rest of the row by the projection code, so a
-- rebuild from the log writes the same. The index holds those runs only: a run without a key costs
-- nothing, and its transitions leave both columns as they were, so they stay in-place updates. An enqueue
-- reads the runs of its key whose time has not run out, or that have none, in one range of the index.

ALTER TABLE runs ADD COLUMN unique_key text, ADD COLUMN unique_until timestamptz;
CREATE INDEX runs_unique_idx ON runs (job, unique_key, unique_until) WHERE unique_key IS NOT NULL;
