-- Where each projection has read the global log up to, written in the same
-- transaction as the rows it covers. `version` is the projection code's
-- version: a changed projection is rebuilt from the start of the log.
CREATE TABLE projection_checkpoints (
  projection       text PRIMARY KEY,
  version          integer NOT NULL,
  commit_position  bigint NOT NULL,
  prepare_position bigint NOT NULL,
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- libs/projections/src/stream-activity.projection.ts: the last event of every stream,
-- for dashboards and auditors browsing the log.
CREATE TABLE stream_activity (
  stream_id        text PRIMARY KEY,
  category         text NOT NULL,
  revision         bigint NOT NULL,
  last_event_type  text NOT NULL,
  last_recorded_at timestamptz NOT NULL
);
CREATE INDEX stream_activity_category_idx ON stream_activity (category, last_recorded_at DESC);
