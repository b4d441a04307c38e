-- A run's events are audited from the log itself, not from a second copy of each of them. The audit
-- trail's page of run events reads `events` (EventStore.findEvents): a team's by the index below,
-- the team every run event records in its metadata (libs/commands/src/unit-of-work), in the log's
-- order; a stream's by events_stream_revision_key; the admin's unfiltered page by events_pkey.
-- `audit_events` (libs/projections/src/audit) indexes only the streams that never end: jobs, teams, the
-- platform's; they are few and kept for ever, so it is one plain table again, without the weeks that
-- followed the log's retention (migrations/0020).
--
-- Run events recorded before their metadata named the run's team (the run place, and the team of a
-- RunScheduled from this migration on) are in no team's page; the admin's page lists them.

CREATE INDEX events_team_idx ON events ((metadata->>'team'), transaction_id, global_position)
  WHERE metadata->>'team' IS NOT NULL;

-- The rows of streams that never end are those kept for ever ('infinity'); the weeks (runs') go.
ALTER TABLE audit_events DETACH PARTITION audit_events_kept;
DROP TABLE audit_events;
ALTER TABLE audit_events_kept RENAME TO audit_events;
ALTER TABLE audit_events DROP COLUMN kept_on;
DO $$
DECLARE
  v_index regclass;
BEGIN
  FOR v_index IN SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'audit_events'::regclass LOOP
    EXECUTE format('DROP INDEX %s', v_index);
  END LOOP;
END
$$;
ALTER TABLE audit_events ADD PRIMARY KEY (commit_position, prepare_position);
CREATE INDEX audit_events_team_idx ON audit_events (team, commit_position, prepare_position);
CREATE INDEX audit_events_actor_idx ON audit_events (actor, commit_position, prepare_position);
CREATE INDEX audit_events_stream_idx ON audit_events (stream_id, commit_position, prepare_position);
CREATE INDEX audit_events_type_idx ON audit_events (event_type, commit_position, prepare_position);
CREATE INDEX audit_events_recorded_idx ON audit_events (recorded_at);
