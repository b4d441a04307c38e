-- Canaries (docs/operations.md, "Canaries"): a synthetic job per shard fires every minute in the
-- reserved team _system, and a built-in worker of each API process completes
-- its runs. The scheduler node owning a shard checks each minute's canary run
-- and records here what it found, so that a takeover goes on where the last
-- owner stopped and every process's /healthz can say "degraded".
CREATE TABLE canary_status (
  shard              integer PRIMARY KEY,
  job                text NOT NULL,
  -- The last minute checked (its canary run's nominal fire time).
  checked_through    timestamptz NOT NULL,
  -- Minutes in a row whose canary run had not succeeded a minute after its due time.
  consecutive_missed integer NOT NULL DEFAULT 0,
  missed_total       bigint NOT NULL DEFAULT 0,
  -- First lease time minus due time of the last canary run that succeeded.
  last_lag_seconds   double precision,
  updated_at         timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 50);
