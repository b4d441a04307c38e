-- libs/projections/src/audit: an index of the whole log for auditors (GET /v1/audit), one narrow row per
-- event: where it is in the log, its stream and revision, type, actor, correlation id, the team
-- whose stream it is (null: the platform's, the admin sees it) and when it was recorded. The
-- events' data stays in the log: a page of the index reads its events there (EventStore.readEvents).
-- Newest first is descending position; each filter has the position after its own key, so a page
-- of any one filter is one range scan that stops at the page's size.
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
  PRIMARY KEY (commit_position, prepare_position)
);
CREATE INDEX audit_events_team_idx ON audit_events (team, commit_position, prepare_position);
CREATE INDEX audit_events_actor_idx ON audit_events (actor, commit_position, prepare_position);
CREATE INDEX audit_events_stream_idx ON audit_events (stream_id, commit_position, prepare_position);
CREATE INDEX audit_events_type_idx ON audit_events (event_type, commit_position, prepare_position);
CREATE INDEX audit_events_recorded_idx ON audit_events (recorded_at);

-- Tokens get a public name: events name it in their actor (`team:billing:token:tok_…`). Those issued
-- before take one from their hash, as the configured admin token does.
ALTER TABLE api_tokens ADD COLUMN token_id text;
UPDATE api_tokens SET token_id = 'tok_' || left(token_hash, 16);
ALTER TABLE api_tokens ALTER COLUMN token_id SET NOT NULL;
CREATE UNIQUE INDEX api_tokens_token_id_key ON api_tokens (token_id);
