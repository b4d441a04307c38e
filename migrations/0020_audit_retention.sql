-- The audit index kept as the log is: `audit_events` LIST-partitioned by `kept_on`, the
-- UTC week (its Monday) of a run's event, and 'infinity' (`audit_events_kept`) for every other
-- stream's. The scheduler's retention pass drops a week's rows once the week is past the first day
-- kept, as it drops the log's weeks; job, team and platform events stay indexed for ever. The
-- projection computes the week (libs/projections/src/audit); rows of a week without its partition go to
-- `audit_events_unsorted` until the pass gives them one.
ALTER TABLE audit_events RENAME TO audit_events_old;
ALTER INDEX audit_events_pkey RENAME TO audit_events_old_pkey;
ALTER INDEX audit_events_team_idx RENAME TO audit_events_old_team_idx;
ALTER INDEX audit_events_actor_idx RENAME TO audit_events_old_actor_idx;
ALTER INDEX audit_events_stream_idx RENAME TO audit_events_old_stream_idx;
ALTER INDEX audit_events_type_idx RENAME TO audit_events_old_type_idx;
ALTER INDEX audit_events_recorded_idx RENAME TO audit_events_old_recorded_idx;

CREATE TABLE audit_events (
  commit_position  bigint NOT NULL,
  prepare_position bigint NOT NULL,
  stream_id        text COLLATE "C" NOT NULL,
  revision         bigint NOT NULL,
  event_type       text NOT NULL,
  actor            text,
  team             text,
  correlation_id   text,
  recorded_at      timestamptz NOT NULL,
  kept_on          date NOT NULL,
  PRIMARY KEY (commit_position, prepare_position, kept_on)
) PARTITION BY LIST (kept_on);
CREATE INDEX audit_events_team_idx ON audit_events (team, commit_position, prepare_position);
CREATE INDEX audit_events_actor_idx ON audit_events (actor, commit_position, prepare_position);
CREATE INDEX audit_events_stream_idx ON audit_events (stream_id, commit_position, prepare_position);
CREATE INDEX audit_events_type_idx ON audit_events (event_type, commit_position, prepare_position);
CREATE INDEX audit_events_recorded_idx ON audit_events (recorded_at);
CREATE TABLE audit_events_kept PARTITION OF audit_events FOR VALUES IN ('infinity');
CREATE TABLE audit_events_unsorted PARTITION OF audit_events DEFAULT;

DO $$
DECLARE
  v_week date;
BEGIN
  FOR v_week IN
    SELECT DISTINCT date_trunc('week', recorded_at AT TIME ZONE 'UTC')::date FROM audit_events_old WHERE starts_with(stream_id, 'run-')
    UNION SELECT date_trunc('week', clock_timestamp() AT TIME ZONE 'UTC')::date + 7 * g FROM generate_series(0, 2) g
  LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF audit_events FOR VALUES IN (%L)',
                   'audit_events_w' || to_char(v_week, 'YYYYMMDD'), v_week);
  END LOOP;
END
$$;

INSERT INTO audit_events
SELECT o.*, CASE WHEN starts_with(o.stream_id, 'run-')
                 THEN date_trunc('week', o.recorded_at AT TIME ZONE 'UTC')::date ELSE 'infinity'::date END
  FROM audit_events_old o;
DROP TABLE audit_events_old;
