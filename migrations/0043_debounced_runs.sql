-- Debounced runs (docs/api.md, "Debounced runs"): an enqueue naming a debounce key while a run of the job
-- with that key waits for its first lease moves that run (RunDebounced) instead of making another. The key
-- is a column of the run's row, kept only while the run can be moved (debounceKeyKept: scheduled, never
-- leased), so the index below holds those runs alone and finding a key's run is one probe of it, under
-- the key's lock (debounced-runs.sql.ts). A run without a key keeps NULL: no index entry, and its
-- transitions change no indexed column.

ALTER TABLE runs ADD COLUMN debounce_key text;
CREATE INDEX runs_debounce_idx ON runs (job, debounce_key) WHERE debounce_key IS NOT NULL;
