-- libs/projections/src/run-activity: what happened to runs, per minute (by the time each event was recorded
-- in the log), team, queue and priority. The dashboard's charts of the last hour read it (GraphQL
-- queueHistory): leases, successes, failures, lease expiries and new dead runs, and the schedule lag
-- of first leases as a histogram (lag_counts, bounds in libs/projections/src/run-activity/lag-histogram.ts).
-- A counter row is exact because the projector applies each batch once, in the transaction that
-- moves its checkpoint. Minutes older than a day are deleted by the projection as it goes.
CREATE TABLE run_activity_minutes (
  team          text NOT NULL,
  minute        timestamptz NOT NULL,
  queue         text NOT NULL,
  priority      text NOT NULL,
  leased        integer NOT NULL,
  succeeded     integer NOT NULL,
  failed        integer NOT NULL,
  lease_expired integer NOT NULL,
  dead          integer NOT NULL,
  lag_counts    integer[] NOT NULL,
  -- A team's last hour is one range of this key.
  PRIMARY KEY (team, minute, queue, priority)
);
-- Every team's last hour (the admin), and the deletion of old minutes.
CREATE INDEX run_activity_minutes_minute_idx ON run_activity_minutes (minute);
