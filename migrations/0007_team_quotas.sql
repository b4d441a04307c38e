-- A team's enqueue quotas (docs/api.md, "Quotas"). No row: unlimited. The admin's
-- PUT writes the limits; every enqueue of a limited team reads them, and the
-- token bucket, under the team's quota lock (apps/api/src/quotas).
CREATE TABLE team_quotas (
  team                     text PRIMARY KEY REFERENCES teams (id),
  enqueue_rate_per_second  double precision CHECK (enqueue_rate_per_second > 0),
  -- As the admin set it; NULL with a rate means max(1, ceil(rate)).
  enqueue_burst            integer CHECK (enqueue_burst >= 1),
  max_pending_runs         integer CHECK (max_pending_runs >= 1),
  -- The token bucket: tokens left at refilled_at (database time). NULL
  -- without a rate.
  tokens                   double precision,
  refilled_at              timestamptz,
  updated_at               timestamptz NOT NULL DEFAULT now(),
  CHECK ((enqueue_rate_per_second IS NULL) = (tokens IS NULL)),
  CHECK (enqueue_burst IS NULL OR enqueue_rate_per_second IS NOT NULL)
);

-- The pending count of a team with maxPendingRuns: runs not in a final state.
-- Partial, so a team's finished history is not in it; the count stops at the
-- limit (LIMIT max_pending_runs, see apps/api/src/quotas/team-quotas.sql.ts).
CREATE INDEX runs_pending_idx ON runs (team) WHERE state IN ('scheduled', 'retry_wait', 'leased');
