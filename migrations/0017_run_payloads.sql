-- Large payloads by reference (docs/api.md, "Payloads"). A run's payload
-- over 4 KB of JSON is stored here once, under the SHA-256 of its JSON, and
-- the run's RunScheduled event and its `runs` row carry only the reference
-- (`payloadRef`: the hash and the size) with `payload: null`. Runs that carry
-- the same payload (a job's default, a batch of the same) share one row.
-- The worker still gets the payload inline in its lease. Rows are written
-- before any event names them and never change; `json` keeps the text whose
-- hash is the key.
CREATE TABLE run_payloads (
  sha256    text COLLATE "C" PRIMARY KEY,
  body      json NOT NULL,
  bytes     integer NOT NULL,
  stored_at timestamptz NOT NULL DEFAULT now()
);
