-- GENERATED FILE: do not edit. The schema the migrations in this folder leave, read from the catalog
-- of a freshly migrated database by `npm run schema:snapshot` (libs/platform/src/database/schema-snapshot.ts).
-- Nothing applies this file: the numbered migrations are the source (migrations/README.md). Regenerate
-- and commit it with every migration; schema-snapshot.int-spec.ts fails while it differs.
--
-- Partitions named by a date are made for the days around the day the migrations ran (and later by the
-- retention passes): each table's are named by their pattern (YYYYMMDD) and left out.

-- Extensions

CREATE EXTENSION plpgsql WITH SCHEMA pg_catalog;

-- Schemas: none

-- Types: none

-- Tables

CREATE TABLE api_tokens (
  token_hash text NOT NULL,
  kind text NOT NULL,
  team text,
  queues text[] NOT NULL DEFAULT '{}'::text[],
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  token_id text NOT NULL,
  expires_at timestamp with time zone,
  revoked_at timestamp with time zone,
  last_used_at timestamp with time zone,
  CONSTRAINT api_tokens_kind_check CHECK ((kind = ANY (ARRAY['admin'::text, 'team'::text, 'worker'::text]))),
  CONSTRAINT api_tokens_pkey PRIMARY KEY (token_hash),
  CONSTRAINT api_tokens_team_check CHECK ((((kind = 'admin'::text) AND (team IS NULL)) OR ((kind = 'team'::text) AND (team IS NOT NULL)) OR (kind = 'worker'::text))),
  CONSTRAINT api_tokens_team_fkey FOREIGN KEY (team) REFERENCES teams(id)
);

CREATE TABLE audit_events (
  commit_position bigint NOT NULL,
  prepare_position bigint NOT NULL,
  stream_id text COLLATE "C" NOT NULL,
  revision bigint NOT NULL,
  event_type text NOT NULL,
  actor text,
  team text,
  correlation_id text,
  recorded_at timestamp with time zone NOT NULL,
  CONSTRAINT audit_events_pkey PRIMARY KEY (commit_position, prepare_position)
);

CREATE TABLE bulk_operation_targets (
  operation_id text COLLATE "C" NOT NULL,
  target text COLLATE "C" NOT NULL,
  CONSTRAINT bulk_operation_targets_pkey PRIMARY KEY (operation_id, target)
);

CREATE TABLE bulk_operations (
  id text COLLATE "C" NOT NULL,
  team text,
  actor text NOT NULL,
  action text NOT NULL,
  filter jsonb NOT NULL,
  snapshot_at timestamp with time zone NOT NULL,
  cursors jsonb NOT NULL,
  matched integer NOT NULL,
  processed integer NOT NULL DEFAULT 0,
  acted integer NOT NULL DEFAULT 0,
  skipped integer NOT NULL DEFAULT 0,
  status text NOT NULL,
  owner text,
  heartbeat_at timestamp with time zone,
  error text,
  correlation_id text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  finished_at timestamp with time zone,
  CONSTRAINT bulk_operations_action_check CHECK ((action = ANY (ARRAY['cancel-runs'::text, 'pause-jobs'::text, 'resume-jobs'::text, 'replay-dead'::text, 'discard-dead'::text]))),
  CONSTRAINT bulk_operations_pkey PRIMARY KEY (id),
  CONSTRAINT bulk_operations_status_check CHECK ((status = ANY (ARRAY['running'::text, 'stopping'::text, 'stopped'::text, 'done'::text, 'failed'::text])))
);

CREATE TABLE canary_status (
  shard integer NOT NULL,
  job text NOT NULL,
  checked_through timestamp with time zone NOT NULL,
  consecutive_missed integer NOT NULL DEFAULT 0,
  missed_total bigint NOT NULL DEFAULT 0,
  last_lag_seconds double precision,
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT canary_status_pkey PRIMARY KEY (shard)
)
WITH (fillfactor=50);

CREATE TABLE events (
  global_position bigint NOT NULL DEFAULT nextval('events_global_position_seq'::regclass),
  transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  stream_revision bigint NOT NULL,
  recorded_at timestamp with time zone NOT NULL DEFAULT date_trunc('milliseconds'::text, clock_timestamp()),
  event_id uuid NOT NULL,
  correlation_uuid uuid,
  kept_on date NOT NULL DEFAULT 'infinity'::date,
  schema_version smallint,
  stream_key bytea NOT NULL,
  event_type text NOT NULL,
  actor text,
  team text,
  correlation_id text,
  data json NOT NULL,
  metadata json,
  CONSTRAINT events_event_type_check CHECK ((event_type <> ''::text)),
  CONSTRAINT events_pkey PRIMARY KEY (transaction_id, global_position, kept_on),
  CONSTRAINT events_stream_key_check CHECK ((length(stream_key) > 0)),
  CONSTRAINT events_stream_revision_check CHECK ((stream_revision >= 0)),
  CONSTRAINT events_stream_revision_key UNIQUE (stream_key, stream_revision, kept_on)
)
PARTITION BY LIST (kept_on);
-- and its partitions by date, events_wYYYYMMDD (left out: they depend on the day)

CREATE TABLE events_kept PARTITION OF events FOR VALUES IN ('infinity');

CREATE TABLE events_unsorted PARTITION OF events DEFAULT;

CREATE TABLE job_signing_secrets (
  job text COLLATE "C" NOT NULL,
  secret text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
  retires_at timestamp with time zone,
  CONSTRAINT job_signing_secrets_pkey PRIMARY KEY (job, created_at)
);

CREATE TABLE jobs (
  name text COLLATE "C" NOT NULL,
  team text NOT NULL,
  definition jsonb NOT NULL,
  version integer NOT NULL,
  paused boolean NOT NULL DEFAULT false,
  revision bigint NOT NULL,
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  run_limit integer GENERATED ALWAYS AS (
CASE
    WHEN ((jsonb_typeof((definition -> 'schedule'::text)) = 'object'::text) AND (job_overlap_policy(definition) <> 'allow_all'::text)) THEN 1
    ELSE ((definition ->> 'concurrency'::text))::integer
END) STORED,
  key_limit integer GENERATED ALWAYS AS (COALESCE(((definition ->> 'perKeyConcurrency'::text))::integer, 1)) STORED,
  ordering_skips boolean GENERATED ALWAYS AS (COALESCE(((definition ->> 'orderingOnRetry'::text) = 'skip'::text), false)) STORED,
  rate_per_second double precision GENERATED ALWAYS AS (((((definition -> 'rate'::text) ->> 'limit'::text))::double precision / rate_seconds(((definition -> 'rate'::text) ->> 'per'::text)))) STORED,
  rate_burst integer GENERATED ALWAYS AS (COALESCE((((definition -> 'rate'::text) ->> 'burst'::text))::integer, (((definition -> 'rate'::text) ->> 'limit'::text))::integer)) STORED,
  key_rate_per_second double precision GENERATED ALWAYS AS (((((definition -> 'keyRate'::text) ->> 'limit'::text))::double precision / rate_seconds(((definition -> 'keyRate'::text) ->> 'per'::text)))) STORED,
  key_rate_burst integer GENERATED ALWAYS AS (COALESCE((((definition -> 'keyRate'::text) ->> 'burst'::text))::integer, (((definition -> 'keyRate'::text) ->> 'limit'::text))::integer)) STORED,
  CONSTRAINT jobs_pkey PRIMARY KEY (name)
);

CREATE TABLE moving_shards (
  shard integer NOT NULL,
  shards integer NOT NULL,
  direction text NOT NULL,
  since timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT moving_shards_check CHECK ((shards > shard)),
  CONSTRAINT moving_shards_direction_check CHECK ((direction = ANY (ARRAY['in'::text, 'out'::text]))),
  CONSTRAINT moving_shards_pkey PRIMARY KEY (shard),
  CONSTRAINT moving_shards_shard_check CHECK ((shard >= 0))
);

CREATE TABLE projection_checkpoints (
  projection text NOT NULL,
  version integer NOT NULL,
  commit_position bigint NOT NULL,
  prepare_position bigint NOT NULL,
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT projection_checkpoints_pkey PRIMARY KEY (projection)
)
WITH (autovacuum_vacuum_cost_delay=0, autovacuum_vacuum_threshold=500);

CREATE TABLE queue_grants (
  queue text NOT NULL,
  team text NOT NULL,
  weight integer NOT NULL DEFAULT 1,
  granted_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT queue_grants_pkey PRIMARY KEY (queue, team),
  CONSTRAINT queue_grants_team_fkey FOREIGN KEY (team) REFERENCES teams(id),
  CONSTRAINT queue_grants_weight_check CHECK (((weight >= 1) AND (weight <= 100)))
);

CREATE TABLE queue_limits (
  queue text NOT NULL,
  concurrency integer NOT NULL,
  set_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT queue_limits_concurrency_check CHECK (((concurrency >= 1) AND (concurrency <= 100000))),
  CONSTRAINT queue_limits_pkey PRIMARY KEY (queue)
);

CREATE TABLE queue_rates (
  queue text NOT NULL,
  "limit" integer NOT NULL,
  per text NOT NULL,
  burst integer NOT NULL,
  per_second double precision GENERATED ALWAYS AS ((("limit")::double precision / rate_seconds(per))) STORED,
  set_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT queue_rates_burst_check CHECK (((burst >= 1) AND (burst <= 1000000))),
  CONSTRAINT queue_rates_limit_check CHECK ((("limit" >= 1) AND ("limit" <= 1000000))),
  CONSTRAINT queue_rates_per_check CHECK ((per = ANY (ARRAY['second'::text, 'minute'::text, 'hour'::text, 'day'::text]))),
  CONSTRAINT queue_rates_pkey PRIMARY KEY (queue)
);

CREATE TABLE rate_buckets (
  name text COLLATE "C" NOT NULL,
  tokens double precision NOT NULL,
  refilled_at timestamp with time zone NOT NULL,
  CONSTRAINT rate_buckets_pkey PRIMARY KEY (name)
);

CREATE TABLE ready_runs (
  run_id text COLLATE "C" NOT NULL,
  queue text NOT NULL,
  team text NOT NULL,
  priority text NOT NULL,
  job text COLLATE "C" NOT NULL,
  available_at timestamp with time zone NOT NULL,
  state text NOT NULL,
  due_at timestamp with time zone NOT NULL,
  concurrency_key text,
  ordering_key text,
  ordering_seq bigint,
  CONSTRAINT ready_runs_pkey PRIMARY KEY (run_id)
)
WITH (autovacuum_analyze_scale_factor=0.02, autovacuum_vacuum_cost_delay=0, autovacuum_vacuum_scale_factor=0.01, autovacuum_vacuum_threshold=2000);

CREATE TABLE retired_runs (
  retired_on date NOT NULL,
  first_hash bigint NOT NULL,
  hashes bigint[] NOT NULL,
  CONSTRAINT retired_runs_pkey PRIMARY KEY (retired_on, first_hash)
);

CREATE TABLE run_activity_minutes (
  team text NOT NULL,
  minute timestamp with time zone NOT NULL,
  queue text NOT NULL,
  priority text NOT NULL,
  leased integer NOT NULL,
  succeeded integer NOT NULL,
  failed integer NOT NULL,
  lease_expired integer NOT NULL,
  dead integer NOT NULL,
  lag_counts integer[] NOT NULL,
  CONSTRAINT run_activity_minutes_pkey PRIMARY KEY (team, minute, queue, priority)
);

CREATE TABLE run_leases (
  run_id text COLLATE "C" NOT NULL,
  job text COLLATE "C" NOT NULL,
  team text NOT NULL,
  queue text NOT NULL,
  priority text NOT NULL,
  due_at timestamp with time zone NOT NULL,
  lease_expires_at timestamp with time zone NOT NULL,
  concurrency_key text,
  ordering_key text,
  CONSTRAINT run_leases_pkey PRIMARY KEY (job, run_id)
)
WITH (autovacuum_analyze_scale_factor=0.02, autovacuum_vacuum_cost_delay=0, autovacuum_vacuum_scale_factor=0.01, autovacuum_vacuum_threshold=2000);

CREATE TABLE run_listing (
  run_id text COLLATE "C" NOT NULL,
  team text NOT NULL,
  job text COLLATE "C" NOT NULL,
  queue text NOT NULL,
  due_at timestamp with time zone NOT NULL,
  kept_on date NOT NULL DEFAULT 'infinity'::date,
  definition jsonb NOT NULL,
  CONSTRAINT run_listing_pkey PRIMARY KEY (run_id, kept_on)
)
PARTITION BY LIST (kept_on);
-- and its partitions by date, run_listing_dYYYYMMDD (left out: they depend on the day)

CREATE TABLE run_listing_kept PARTITION OF run_listing FOR VALUES IN ('infinity');

CREATE TABLE run_listing_unsorted PARTITION OF run_listing DEFAULT;

CREATE TABLE run_payloads (
  sha256 text COLLATE "C" NOT NULL,
  body json NOT NULL,
  bytes integer NOT NULL,
  stored_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT run_payloads_pkey PRIMARY KEY (sha256)
);

CREATE TABLE run_retention (
  singleton boolean NOT NULL DEFAULT true,
  kept_since date NOT NULL,
  CONSTRAINT run_retention_pkey PRIMARY KEY (singleton),
  CONSTRAINT run_retention_singleton_check CHECK (singleton)
);

CREATE TABLE run_servers (
  name text NOT NULL,
  url text NOT NULL,
  added_at timestamp with time zone NOT NULL DEFAULT now(),
  retired_at timestamp with time zone,
  fenced_at timestamp with time zone,
  standby_url text,
  CONSTRAINT run_servers_pkey PRIMARY KEY (name)
);

CREATE TABLE runs (
  run_id text COLLATE "C" NOT NULL,
  team text NOT NULL,
  job text COLLATE "C" NOT NULL,
  queue text NOT NULL,
  priority text NOT NULL,
  due_at timestamp with time zone NOT NULL,
  available_at timestamp with time zone NOT NULL,
  attempt_limit integer NOT NULL,
  kept_on date NOT NULL DEFAULT 'infinity'::date,
  discarded boolean NOT NULL DEFAULT false,
  revision bigint NOT NULL,
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  lease_expires_at timestamp with time zone,
  state text NOT NULL,
  finished_at timestamp with time zone,
  attempt integer NOT NULL,
  fencing_token bigint,
  leased_at timestamp with time zone,
  worker_id text,
  dead_at timestamp with time zone,
  last_error text,
  death jsonb,
  ended text,
  unique_key text,
  unique_until timestamp with time zone,
  concurrency_key text,
  ordering_key text,
  ordering_seq bigint,
  debounce_key text,
  CONSTRAINT runs_ended_check CHECK ((NOT (ended IS DISTINCT FROM
CASE
    WHEN (state = ANY (ARRAY['dead'::text, 'cancelled'::text])) THEN state
    ELSE NULL::text
END))),
  CONSTRAINT runs_pkey PRIMARY KEY (run_id, kept_on),
  CONSTRAINT runs_priority_check CHECK ((priority = ANY (ARRAY['critical'::text, 'default'::text, 'bulk'::text]))),
  CONSTRAINT runs_state_check CHECK ((state = ANY (ARRAY['scheduled'::text, 'leased'::text, 'succeeded'::text, 'retry_wait'::text, 'dead'::text, 'cancelled'::text])))
)
PARTITION BY LIST (kept_on);
-- and its partitions by date, runs_dYYYYMMDD (left out: they depend on the day)

CREATE TABLE runs_kept PARTITION OF runs FOR VALUES IN ('infinity')
WITH (autovacuum_analyze_scale_factor=0.02, autovacuum_vacuum_cost_delay=0, autovacuum_vacuum_scale_factor=0.01, autovacuum_vacuum_threshold=2000, fillfactor=50);

CREATE TABLE runs_unsorted PARTITION OF runs DEFAULT
WITH (autovacuum_analyze_scale_factor=0.02, autovacuum_vacuum_cost_delay=0, autovacuum_vacuum_scale_factor=0.01, autovacuum_vacuum_threshold=2000, fillfactor=50);

CREATE TABLE schedule_cursors (
  job text COLLATE "C" NOT NULL,
  materialised_through timestamp with time zone,
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  next_fire_at timestamp with time zone,
  CONSTRAINT schedule_cursors_pkey PRIMARY KEY (job)
);

CREATE TABLE scheduler_nodes (
  node text NOT NULL,
  started_at timestamp with time zone NOT NULL DEFAULT now(),
  last_seen timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT scheduler_nodes_pkey PRIMARY KEY (node)
)
WITH (fillfactor=50);

CREATE TABLE schema_migrations (
  version integer NOT NULL,
  name text NOT NULL,
  applied_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT schema_migrations_pkey PRIMARY KEY (version)
);

CREATE TABLE shard_leases (
  shard integer NOT NULL,
  owner text,
  epoch bigint NOT NULL DEFAULT 0,
  lease_expires_at timestamp with time zone,
  granted_at timestamp with time zone,
  last_materialised_at timestamp with time zone,
  last_reaped_at timestamp with time zone,
  CONSTRAINT shard_leases_pkey PRIMARY KEY (shard)
)
WITH (fillfactor=50);

CREATE TABLE shard_map (
  shard integer NOT NULL,
  server text NOT NULL,
  epoch bigint NOT NULL DEFAULT 1,
  placed_at timestamp with time zone NOT NULL DEFAULT now(),
  moving_to text,
  CONSTRAINT shard_map_moving_to_fkey FOREIGN KEY (moving_to) REFERENCES run_servers(name),
  CONSTRAINT shard_map_pkey PRIMARY KEY (shard),
  CONSTRAINT shard_map_server_fkey FOREIGN KEY (server) REFERENCES run_servers(name),
  CONSTRAINT shard_map_shard_check CHECK ((shard >= 0))
);

CREATE TABLE shard_settings (
  only_row boolean NOT NULL DEFAULT true,
  shards integer NOT NULL,
  changed_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT shard_settings_only_row_check CHECK (only_row),
  CONSTRAINT shard_settings_pkey PRIMARY KEY (only_row),
  CONSTRAINT shard_settings_shards_check CHECK (((shards >= 1) AND (shards <= 1024)))
);

CREATE TABLE stream_activity (
  stream_id text NOT NULL,
  category text NOT NULL,
  revision bigint NOT NULL,
  last_event_type text NOT NULL,
  last_recorded_at timestamp with time zone NOT NULL,
  CONSTRAINT stream_activity_pkey PRIMARY KEY (stream_id)
);

CREATE TABLE team_quotas (
  team text NOT NULL,
  enqueue_rate_per_second double precision,
  enqueue_burst integer,
  max_pending_runs integer,
  tokens double precision,
  refilled_at timestamp with time zone,
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT team_quotas_check CHECK (((enqueue_rate_per_second IS NULL) = (tokens IS NULL))),
  CONSTRAINT team_quotas_check1 CHECK (((enqueue_burst IS NULL) OR (enqueue_rate_per_second IS NOT NULL))),
  CONSTRAINT team_quotas_enqueue_burst_check CHECK ((enqueue_burst >= 1)),
  CONSTRAINT team_quotas_enqueue_rate_per_second_check CHECK ((enqueue_rate_per_second > (0)::double precision)),
  CONSTRAINT team_quotas_max_pending_runs_check CHECK ((max_pending_runs >= 1)),
  CONSTRAINT team_quotas_pkey PRIMARY KEY (team),
  CONSTRAINT team_quotas_team_fkey FOREIGN KEY (team) REFERENCES teams(id)
);

CREATE TABLE team_rates (
  team text NOT NULL,
  "limit" integer NOT NULL,
  per text NOT NULL,
  burst integer NOT NULL,
  per_second double precision GENERATED ALWAYS AS ((("limit")::double precision / rate_seconds(per))) STORED,
  set_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT team_rates_burst_check CHECK (((burst >= 1) AND (burst <= 1000000))),
  CONSTRAINT team_rates_limit_check CHECK ((("limit" >= 1) AND ("limit" <= 1000000))),
  CONSTRAINT team_rates_per_check CHECK ((per = ANY (ARRAY['second'::text, 'minute'::text, 'hour'::text, 'day'::text]))),
  CONSTRAINT team_rates_pkey PRIMARY KEY (team)
);

CREATE TABLE teams (
  id text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT teams_id_check CHECK ((id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text)),
  CONSTRAINT teams_pkey PRIMARY KEY (id)
);

-- Indexes

CREATE INDEX api_tokens_team_idx ON public.api_tokens USING btree (team, created_at);

CREATE UNIQUE INDEX api_tokens_token_id_key ON public.api_tokens USING btree (token_id);

CREATE INDEX audit_events_actor_idx ON public.audit_events USING btree (actor, commit_position, prepare_position);

CREATE INDEX audit_events_recorded_idx ON public.audit_events USING btree (recorded_at);

CREATE INDEX audit_events_stream_idx ON public.audit_events USING btree (stream_id, commit_position, prepare_position);

CREATE INDEX audit_events_team_idx ON public.audit_events USING btree (team, commit_position, prepare_position);

CREATE INDEX audit_events_type_idx ON public.audit_events USING btree (event_type, commit_position, prepare_position);

CREATE INDEX bulk_operations_live_idx ON public.bulk_operations USING btree (heartbeat_at NULLS FIRST) WHERE (status = ANY (ARRAY['running'::text, 'stopping'::text]));

CREATE INDEX bulk_operations_team_idx ON public.bulk_operations USING btree (team, id DESC);

CREATE INDEX events_team_idx ON public.events USING btree (team, transaction_id, global_position) WHERE (team IS NOT NULL);

CREATE UNIQUE INDEX job_signing_secrets_current_idx ON public.job_signing_secrets USING btree (job) WHERE (retires_at IS NULL);

CREATE INDEX jobs_limited_idx ON public.jobs USING btree (((definition ->> 'queue'::text)), name) WHERE (run_limit IS NOT NULL);

CREATE INDEX jobs_paused_idx ON public.jobs USING btree (name) WHERE paused;

CREATE INDEX jobs_queue_idx ON public.jobs USING btree (((definition ->> 'queue'::text)), name);

CREATE INDEX jobs_rated_idx ON public.jobs USING btree (((definition ->> 'queue'::text))) WHERE (rate_per_second IS NOT NULL);

CREATE INDEX jobs_team_idx ON public.jobs USING btree (team, name);

CREATE INDEX ready_runs_claim_idx ON public.ready_runs USING btree (queue, team, priority, available_at);

CREATE INDEX ready_runs_job_idx ON public.ready_runs USING btree (job, available_at);

CREATE INDEX ready_runs_ordering_idx ON public.ready_runs USING btree (job, ordering_key, ordering_seq) WHERE (ordering_key IS NOT NULL);

CREATE INDEX run_activity_minutes_minute_idx ON public.run_activity_minutes USING btree (minute);

CREATE INDEX run_leases_key_idx ON public.run_leases USING btree (job, concurrency_key) WHERE (concurrency_key IS NOT NULL);

CREATE INDEX run_leases_ordering_idx ON public.run_leases USING btree (job, ordering_key) WHERE (ordering_key IS NOT NULL);

CREATE INDEX run_listing_job_idx ON public.run_listing USING btree (job, due_at DESC, run_id DESC);

CREATE INDEX run_listing_payload_ref_idx ON public.run_listing USING btree ((((definition -> 'payloadRef'::text) ->> 'sha256'::text))) WHERE (definition ? 'payloadRef'::text);

CREATE INDEX run_listing_queue_idx ON public.run_listing USING btree (queue, due_at DESC, run_id DESC);

CREATE INDEX run_listing_team_idx ON public.run_listing USING btree (team, due_at DESC, run_id DESC);

CREATE INDEX runs_debounce_idx ON public.runs USING btree (job, debounce_key) WHERE (debounce_key IS NOT NULL);

CREATE INDEX runs_dlq_idx ON public.runs USING btree (team, dead_at DESC, run_id DESC) WHERE ((ended = 'dead'::text) AND (NOT discarded));

CREATE INDEX runs_ended_job_idx ON public.runs USING btree (job, due_at DESC, run_id DESC) WHERE (ended IS NOT NULL);

CREATE INDEX runs_ended_team_idx ON public.runs USING btree (team, due_at DESC, run_id DESC) WHERE (ended IS NOT NULL);

CREATE INDEX runs_unique_idx ON public.runs USING btree (job, unique_key, unique_until) WHERE (unique_key IS NOT NULL);

CREATE INDEX schedule_cursors_due_idx ON public.schedule_cursors USING btree (next_fire_at) WHERE (next_fire_at IS NOT NULL);

CREATE INDEX stream_activity_category_idx ON public.stream_activity USING btree (category, last_recorded_at DESC);

-- Extended statistics

CREATE STATISTICS public.run_listing_keys (dependencies) ON team, job, queue FROM run_listing;

-- Views: none

-- Sequences

CREATE SEQUENCE events_global_position_seq AS bigint START WITH 1 INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1;
ALTER SEQUENCE events_global_position_seq OWNED BY events.global_position;

-- Functions and procedures

CREATE OR REPLACE FUNCTION public.chronicle_refuse_moving_out(p_streams text[], p_events json)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_shard integer;
BEGIN
  SELECT m.shard INTO v_shard
    FROM unnest(p_streams) WITH ORDINALITY AS u(stream, s)
    JOIN LATERAL (
      SELECT coalesce(
        chronicle_run_slot(substr(u.stream, 5)),
        (SELECT chronicle_shard(x.data->>'job', 4096) FROM json_to_recordset(p_events) AS x(s int, type text, data json)
          WHERE x.s = u.s AND x.type = 'RunScheduled' LIMIT 1),
        (SELECT chronicle_shard(r.job, 4096) FROM runs r WHERE r.run_id = substr(u.stream, 5) LIMIT 1)
      ) AS slot
    ) j ON true
    JOIN moving_shards m ON m.direction = 'out' AND j.slot % m.shards = m.shard
   WHERE starts_with(u.stream, 'run-')
   LIMIT 1;
  IF v_shard IS NOT NULL THEN
    RAISE EXCEPTION 'shard % is moving to another server: its runs are not written here meanwhile', v_shard
      USING ERRCODE = 'SH503', DETAIL = json_build_object('shard', v_shard)::text;
  END IF;
END
$function$;

CREATE OR REPLACE FUNCTION public.chronicle_run_slot(p_run_id text)
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
RETURN CASE WHEN (p_run_id ~ '^run_[0-9a-f]{12}8[0-9a-f]{3}[89ab][0-9a-f]{15}$'::text) THEN ((('x'::text || substr(p_run_id, 18, 3)))::bit(12))::integer ELSE NULL::integer END;

CREATE OR REPLACE FUNCTION public.chronicle_shard(job text, shards integer)
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
RETURN ((((('x'::text || "left"(md5(job), 8)))::bit(32))::bigint % (shards)::bigint))::integer;

CREATE OR REPLACE FUNCTION public.chronicle_shard_fence_key()
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
RETURN hashtextextended('shard-fence'::text, (0)::bigint);

CREATE OR REPLACE FUNCTION public.es_already_appended(p_streams text[], p_events json)
 RETURNS TABLE(r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
 LANGUAGE sql
 STABLE
AS $function$
  WITH wanted AS (
    SELECT x.id, es_stream_key(p_streams[x.s]) AS stream_key FROM json_to_recordset(p_events) AS x(s int, id uuid)
  ), found AS (
    SELECT e.stream_key, e.stream_revision, e.transaction_id, e.global_position
      FROM wanted w JOIN events e ON e.stream_key = w.stream_key AND e.event_id = w.id
  )
  SELECT DISTINCT ON (f.stream_key) es_stream_name(f.stream_key), f.stream_revision, f.transaction_id, f.global_position
    FROM found f
   WHERE (SELECT count(*) FROM found) = (SELECT count(*) FROM wanted)
   ORDER BY f.stream_key, f.global_position DESC
$function$;

CREATE OR REPLACE FUNCTION public.es_append(p_streams text[], p_keys bytea[], p_expected bigint[], p_last_ids uuid[], p_events json)
 RETURNS TABLE(r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_base bigint[];
  v_homes date[];
  v_bad bigint;
  v_bad_current bigint;
  v_bad_unexpected boolean;
  v_own_xid xid8 := pg_current_xact_id_if_assigned();
BEGIN
  -- The shard fence (0034): shared with every other append, exclusive for a move's fence.
  PERFORM pg_advisory_xact_lock_shared(chronicle_shard_fence_key());
  IF EXISTS (SELECT 1 FROM moving_shards WHERE direction = 'out') THEN
    PERFORM chronicle_refuse_moving_out(p_streams, p_events);
  END IF;

  -- Lock first, write later (see 0001): sorted, and none for a stream expected not to exist.
  PERFORM pg_advisory_xact_lock(stream_lock_key(u.s))
     FROM unnest(p_streams, p_expected) AS u(s, e) WHERE u.e >= -3 AND u.e <> -1 ORDER BY u.s;

  WITH heads AS (
    SELECT u.i, u.s, u.k, u.e, u.l, h.stream_revision AS current, h.transaction_id AS writer, h.event_id AS last_id,
           h.kept_on AS home
      FROM unnest(p_streams, p_keys, p_expected, p_last_ids) WITH ORDINALITY AS u(s, k, e, l, i)
      LEFT JOIN LATERAL (
        -- A new stream (-4) is not looked for: a one-time filter, so no partition is read for it.
        SELECT e.stream_revision, e.transaction_id, e.event_id, e.kept_on FROM events e
         WHERE u.e <> -4 AND e.stream_key = u.k ORDER BY e.stream_revision DESC LIMIT 1
      ) h ON true
  ), judged AS (
    SELECT heads.*,
           (last_id = l OR (e = -1 AND current IS NOT NULL) OR (e = -3 AND current IS NULL)
             OR (e >= 0 AND current IS DISTINCT FROM e)) AS unexpected,
           -- Wrote before taking the lock, so older than the stream's last writer: a conflict (see 0001).
           coalesce(v_own_xid IS NOT NULL AND writer > v_own_xid, false) AS late
      FROM heads
  )
  SELECT array_agg(coalesce(current, -1) ORDER BY i),
         array_agg(coalesce(home, es_new_stream_home(s)) ORDER BY i),
         (array_agg(i ORDER BY i) FILTER (WHERE unexpected OR late))[1],
         (array_agg(unexpected ORDER BY i) FILTER (WHERE unexpected OR late))[1]
    INTO v_base, v_homes, v_bad, v_bad_unexpected FROM judged;

  IF v_bad IS NOT NULL THEN
    v_bad_current := nullif(v_base[v_bad], -1);
    IF v_bad_unexpected THEN
      RETURN QUERY SELECT * FROM es_already_appended(p_streams, p_events);
      IF FOUND THEN RETURN; END IF;
      RAISE EXCEPTION 'wrong expected revision for stream %', p_streams[v_bad] USING ERRCODE = 'ES409',
        DETAIL = json_build_object('stream', p_streams[v_bad], 'expected', p_expected[v_bad], 'actual', v_bad_current)::text;
    END IF;
    RAISE EXCEPTION 'transaction % wrote before appending to stream %, which a later transaction has since written', v_own_xid, p_streams[v_bad]
      USING ERRCODE = 'ES409',
      DETAIL = json_build_object('stream', p_streams[v_bad], 'expected', p_expected[v_bad], 'actual', v_bad_current)::text;
  END IF;

  RETURN QUERY
  WITH inserted AS (
    INSERT INTO events (event_id, stream_key, stream_revision, event_type, data, metadata, actor, team,
                        correlation_id, correlation_uuid, schema_version, kept_on)
    SELECT x.id, p_keys[x.s], v_base[x.s] + 1 + x.n, x.type, x.data, x.metadata, x.actor, x.team, x.cid, x.cu, x.sv,
           v_homes[x.s]
      FROM json_to_recordset(p_events)
        AS x(s int, n bigint, id uuid, type text, data json, metadata json, actor text, team text, cid text, cu uuid, sv smallint)
    RETURNING stream_key, stream_revision, global_position
  )
    SELECT es_stream_name(i.stream_key), max(i.stream_revision), pg_current_xact_id(), max(i.global_position)
      FROM inserted i GROUP BY i.stream_key;
END
$function$;

CREATE OR REPLACE FUNCTION public.es_new_stream_home(p_stream text)
 RETURNS date
 LANGUAGE sql
 PARALLEL SAFE
RETURN CASE WHEN es_stream_ends(p_stream) THEN (date_trunc('week'::text, (clock_timestamp() AT TIME ZONE 'UTC'::text)))::date ELSE 'infinity'::date END;

CREATE OR REPLACE FUNCTION public.es_stream_ends(p_stream text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
RETURN starts_with(p_stream, 'run-'::text);

CREATE OR REPLACE FUNCTION public.es_stream_key(p_stream text)
 RETURNS bytea
 LANGUAGE sql
 STABLE PARALLEL SAFE
RETURN CASE WHEN ((length(p_stream) = 40) AND starts_with(p_stream, 'run-run_'::text) AND (substr(p_stream, 9) ~ '^[0-9a-f]{32}$'::text)) THEN ('\x00'::bytea || decode(substr(p_stream, 9), 'hex'::text)) ELSE convert_to(p_stream, 'UTF8'::name) END;

CREATE OR REPLACE FUNCTION public.es_stream_name(p_key bytea)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
RETURN CASE WHEN (get_byte(p_key, 0) = 0) THEN ('run-run_'::text || encode(substr(p_key, 2), 'hex'::text)) ELSE convert_from(p_key, 'UTF8'::name) END;

CREATE OR REPLACE FUNCTION public.job_overlap_policy(p_definition jsonb)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
RETURN COALESCE(((p_definition -> 'schedule'::text) ->> 'overlapPolicy'::text), 'buffer_one'::text);

CREATE OR REPLACE FUNCTION public.leased_runs_by_job()
 RETURNS TABLE(job text, leased bigint)
 LANGUAGE plpgsql
 STABLE
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
  RETURN QUERY
    SELECT l.job::text, count(*) FROM run_leases l GROUP BY l.job;
END
$function$;

CREATE OR REPLACE FUNCTION public.leased_runs_by_job(p_queues text[])
 RETURNS TABLE(job text, leased bigint)
 LANGUAGE plpgsql
 STABLE
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  -- Past this many limited jobs, one pass over every leased run costs less than a probe per job.
  c_probes CONSTANT integer := 100;
  v_jobs text[];
BEGIN
  SELECT array_agg(j.name) INTO v_jobs
    FROM (SELECT name FROM jobs WHERE run_limit IS NOT NULL AND definition->>'queue' = ANY(p_queues)
           LIMIT c_probes + 1) j;
  IF v_jobs IS NULL THEN
    RETURN;
  ELSIF cardinality(v_jobs) <= c_probes THEN
    RETURN QUERY
      SELECT l.job::text, count(*) FROM run_leases l WHERE l.job = ANY(v_jobs) GROUP BY l.job;
  ELSE
    RETURN QUERY
      SELECT l.job::text, count(*) FROM run_leases l GROUP BY l.job;
  END IF;
END
$function$;

CREATE OR REPLACE FUNCTION public.lock_and_count_limits(p_queues text[], p_jobs text[], p_key_jobs text[], p_keys text[], p_order_jobs text[] DEFAULT '{}'::text[], p_order_keys text[] DEFAULT '{}'::text[], p_buckets text[] DEFAULT '{}'::text[], p_per_second double precision[] DEFAULT '{}'::double precision[], p_bursts integer[] DEFAULT '{}'::integer[])
 RETURNS TABLE(kind text, name text, key text, room integer, head bigint, tokens double precision, counted_at timestamp with time zone)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_at timestamptz;
BEGIN
  PERFORM lock_limits(p_queues, p_jobs, p_key_jobs, p_keys, p_order_jobs, p_order_keys, p_buckets);
  v_at := clock_timestamp();
  RETURN QUERY
    SELECT 'queue', q.queue, NULL::text,
           q.concurrency - (SELECT count(*) FROM run_leases l WHERE l.queue = q.queue)::integer, NULL::bigint,
           NULL::float8, NULL::timestamptz
      FROM queue_limits q WHERE q.queue = ANY (p_queues)
    UNION ALL
    SELECT 'job', j.name::text, NULL::text,
           j.run_limit - (SELECT count(*) FROM run_leases l WHERE l.job = j.name)::integer, NULL::bigint,
           NULL::float8, NULL::timestamptz
      FROM jobs j WHERE j.name = ANY (p_jobs) AND j.run_limit IS NOT NULL
    UNION ALL
    SELECT 'key', k.job, k.key,
           coalesce(j.key_limit, 1) - (SELECT count(*) FROM run_leases l WHERE l.job = k.job AND l.concurrency_key = k.key)::integer,
           NULL::bigint, NULL::float8, NULL::timestamptz
      FROM unnest(p_key_jobs, p_keys) AS k(job, key) LEFT JOIN jobs j ON j.name = k.job
    UNION ALL
    SELECT 'order', o.job, o.key,
           CASE WHEN EXISTS (SELECT 1 FROM run_leases l WHERE l.job = o.job AND l.ordering_key = o.key) THEN 0 ELSE 1 END,
           (SELECT min(w.ordering_seq) FROM ready_runs w
             WHERE w.job = o.job AND w.ordering_key = o.key
               AND NOT (w.state = 'retry_wait' AND w.available_at > now()
                        AND coalesce((SELECT j.ordering_skips FROM jobs j WHERE j.name = o.job), false))),
           NULL::float8, NULL::timestamptz
      FROM unnest(p_order_jobs, p_order_keys) AS o(job, key)
    UNION ALL
    SELECT 'rate', t.name, NULL::text, floor(t.tokens)::integer, NULL::bigint, t.tokens, v_at
      FROM (SELECT b.name, rate_tokens_at(b.name, b.per_second, b.burst, v_at) AS tokens
              FROM unnest(p_buckets, p_per_second, p_bursts) AS b(name, per_second, burst)) t;
END
$function$;

CREATE OR REPLACE FUNCTION public.lock_and_read_runs(p_run_ids text[])
 RETURNS TABLE(run_id text, job text, state text, revision bigint, definition jsonb, attempt integer, attempt_limit integer, available_at timestamp with time zone, fencing_token bigint, worker_id text, leased_at timestamp with time zone, lease_expires_at timestamp with time zone, last_error text, death jsonb, discarded boolean, finished_at timestamp with time zone)
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_found integer;
  v_today date := (now() AT TIME ZONE 'UTC')::date;
  v_recent date[] := ARRAY[v_today - 1, v_today, v_today + 1, 'infinity'::date];
BEGIN
  PERFORM pg_advisory_xact_lock(stream_lock_key(run_stream_id(u.id)))
     FROM unnest(p_run_ids) AS u(id) ORDER BY run_stream_id(u.id);
  RETURN QUERY
    SELECT r.run_id::text, r.job::text, r.state, r.revision,
           (SELECT l.definition FROM run_listing l WHERE l.run_id = r.run_id AND l.kept_on = r.kept_on),
           r.attempt, r.attempt_limit,
           r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death,
           r.discarded, r.finished_at
      FROM runs r WHERE r.kept_on = ANY(v_recent) AND r.run_id = ANY(p_run_ids);
  GET DIAGNOSTICS v_found = ROW_COUNT;
  IF v_found < cardinality(p_run_ids) THEN
    RETURN QUERY
      SELECT r.run_id::text, r.job::text, r.state, r.revision,
             (SELECT l.definition FROM run_listing l WHERE l.run_id = r.run_id AND l.kept_on = r.kept_on),
             r.attempt, r.attempt_limit,
             r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death,
             r.discarded, r.finished_at
        FROM runs r WHERE r.kept_on <> ALL(v_recent) AND r.run_id = ANY(p_run_ids);
  END IF;
END
$function$;

CREATE OR REPLACE FUNCTION public.lock_limits(p_queues text[], p_jobs text[], p_key_jobs text[], p_keys text[], p_order_jobs text[] DEFAULT '{}'::text[], p_order_keys text[] DEFAULT '{}'::text[], p_buckets text[] DEFAULT '{}'::text[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(l.name, 0))
     FROM (SELECT 0 AS kind, 'queue-concurrency-' || q.queue AS name, q.queue AS job, '' AS key
             FROM queue_limits q WHERE q.queue = ANY (p_queues)
           UNION ALL
           SELECT 1, 'job-concurrency-' || u.job, u.job, '' FROM unnest(p_jobs) AS u(job)
           UNION ALL
           SELECT 2, 'key-concurrency-' || k.job || chr(31) || k.key, k.job, k.key
             FROM unnest(p_key_jobs, p_keys) AS k(job, key)
           UNION ALL
           SELECT 3, 'ordering-key-' || o.job || chr(31) || o.key, o.job, o.key
             FROM unnest(p_order_jobs, p_order_keys) AS o(job, key)
           UNION ALL
           SELECT 4, 'rate-bucket-' || b.name, b.name, '' FROM unnest(p_buckets) AS b(name)) l
    ORDER BY l.kind, l.job COLLATE "C", l.key COLLATE "C";
END
$function$;

CREATE OR REPLACE FUNCTION public.next_ordering_seqs(p_jobs text[], p_keys text[])
 RETURNS TABLE(job text, key text, seq bigint)
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM lock_limits('{}', '{}', '{}', '{}', p_jobs, p_keys);
  RETURN QUERY
    SELECT k.job, k.key,
           greatest(floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint,
                    coalesce((SELECT max(w.ordering_seq) FROM ready_runs w
                               WHERE w.job = k.job AND w.ordering_key = k.key), 0) + 1)
      FROM unnest(p_jobs, p_keys) AS k(job, key);
END
$function$;

CREATE OR REPLACE FUNCTION public.next_rate_token_at(p_queues text[])
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$
  SELECT min(clock_timestamp() + (1 - t.tokens) / t.per_second * interval '1 second')
    FROM (SELECT rate_tokens('job:' || j.name, j.rate_per_second, j.rate_burst) AS tokens, j.rate_per_second AS per_second
            FROM jobs j WHERE (j.definition->>'queue') = ANY (p_queues) AND j.rate_per_second IS NOT NULL
          UNION ALL
          SELECT rate_tokens('queue:' || q.queue, q.per_second, q.burst), q.per_second
            FROM queue_rates q WHERE q.queue = ANY (p_queues)
          UNION ALL
          SELECT rate_tokens('team:' || r.team, r.per_second, r.burst), r.per_second
            FROM team_rates r WHERE r.team IN (SELECT g.team FROM queue_grants g WHERE g.queue = ANY (p_queues))) t
   WHERE t.tokens < 1
$function$;

CREATE OR REPLACE FUNCTION public.ordering_head(p_job text, p_key text, p_seq bigint)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
  SELECT NOT EXISTS (SELECT 1 FROM run_leases l WHERE l.job = p_job AND l.ordering_key = p_key)
     AND NOT EXISTS (SELECT 1 FROM ready_runs o
                      WHERE o.job = p_job AND o.ordering_key = p_key AND o.ordering_seq < p_seq
                        AND NOT (o.state = 'retry_wait' AND o.available_at > now()
                                 AND coalesce((SELECT j.ordering_skips FROM jobs j WHERE j.name = p_job), false)))
$function$;

CREATE OR REPLACE FUNCTION public.rate_limit_state()
 RETURNS TABLE(rate_limit text, tokens double precision, throttled integer)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT 'job:' || j.name, t.tokens,
         CASE WHEN t.tokens < 1 THEN (SELECT count(*) FROM (SELECT 1 FROM ready_runs r
                                                           WHERE r.job = j.name AND r.available_at <= now() LIMIT 10000) n)::integer
              ELSE 0 END
    FROM jobs j CROSS JOIN LATERAL (SELECT rate_tokens('job:' || j.name, j.rate_per_second, j.rate_burst) AS tokens) t
   WHERE j.rate_per_second IS NOT NULL
  UNION ALL
  SELECT 'queue:' || q.queue, t.tokens,
         CASE WHEN t.tokens < 1 THEN (SELECT count(*) FROM (SELECT 1 FROM ready_runs r
                                                           WHERE r.queue = q.queue AND r.available_at <= now() LIMIT 10000) n)::integer
              ELSE 0 END
    FROM queue_rates q CROSS JOIN LATERAL (SELECT rate_tokens('queue:' || q.queue, q.per_second, q.burst) AS tokens) t
  UNION ALL
  SELECT 'team:' || m.team, t.tokens,
         CASE WHEN t.tokens < 1 THEN (SELECT count(*) FROM (SELECT 1 FROM jobs j
                                                           CROSS JOIN LATERAL (SELECT 1 FROM ready_runs r
                                                                                WHERE r.job = j.name AND r.available_at <= now()
                                                                                LIMIT 10000) x
                                                           WHERE j.team = m.team LIMIT 10000) n)::integer
              ELSE 0 END
    FROM team_rates m CROSS JOIN LATERAL (SELECT rate_tokens('team:' || m.team, m.per_second, m.burst) AS tokens) t
  UNION ALL
  SELECT 'key:' || j.name, NULL::float8,
         (SELECT count(*) FROM (SELECT 1 FROM ready_runs r
                                 WHERE r.job = j.name AND r.concurrency_key IS NOT NULL AND r.available_at <= now()
                                   AND rate_tokens('key:' || r.job || chr(31) || r.concurrency_key,
                                                   j.key_rate_per_second, j.key_rate_burst) < 1
                                 LIMIT 10000) n)::integer
    FROM jobs j WHERE j.key_rate_per_second IS NOT NULL
$function$;

CREATE OR REPLACE FUNCTION public.rate_seconds(p_per text)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT CASE p_per WHEN 'second' THEN 1 WHEN 'minute' THEN 60 WHEN 'hour' THEN 3600 WHEN 'day' THEN 86400 END::float8
$function$;

CREATE OR REPLACE FUNCTION public.rate_tokens(p_name text, p_per_second double precision, p_burst integer)
 RETURNS double precision
 LANGUAGE sql
 STABLE
AS $function$
  SELECT rate_tokens_at(p_name, p_per_second, p_burst, now())
$function$;

CREATE OR REPLACE FUNCTION public.rate_tokens_at(p_name text, p_per_second double precision, p_burst integer, p_at timestamp with time zone)
 RETURNS double precision
 LANGUAGE sql
 STABLE
AS $function$
  SELECT coalesce((SELECT least(p_burst, b.tokens + greatest(0, extract(epoch FROM p_at - b.refilled_at)) * p_per_second)
                     FROM rate_buckets b WHERE b.name = p_name), p_burst)
$function$;

CREATE OR REPLACE FUNCTION public.ready_runs_of(p_queue text, p_team text, p_priority text, p_until timestamp with time zone, p_skip_runs text[], p_skip_jobs text[], p_limit integer)
 RETURNS TABLE(run_id text, job text, team text, priority text, available_at timestamp with time zone, concurrency_key text, key_room integer)
 LANGUAGE plpgsql
 STABLE
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET enable_sort TO 'off'
AS $function$
DECLARE
  v_moving integer[];
  v_shards integer;
BEGIN
  SELECT array_agg(m.shard), max(m.shards) INTO v_moving, v_shards FROM moving_shards m;
  RETURN QUERY
    SELECT k.run_id, k.job, k.team, k.priority, k.available_at, k.concurrency_key, k.key_room
      FROM (
        SELECT r.run_id::text, r.job::text, r.team, r.priority, r.available_at, r.concurrency_key,
               CASE WHEN r.concurrency_key IS NOT NULL THEN (
                 SELECT least(j.key_limit - (SELECT count(*) FROM (SELECT 1 FROM run_leases l
                                                                    WHERE l.job = r.job AND l.concurrency_key = r.concurrency_key
                                                                    LIMIT j.key_limit) n)::integer,
                              CASE WHEN j.key_rate_per_second IS NOT NULL THEN
                                floor(rate_tokens('key:' || r.job || chr(31) || r.concurrency_key,
                                                  j.key_rate_per_second, j.key_rate_burst))::integer END)
                   FROM jobs j WHERE j.name = r.job) END AS key_room
          FROM ready_runs r
         WHERE r.queue = p_queue AND r.team = p_team AND r.priority = p_priority AND r.available_at <= p_until
           AND r.run_id <> ALL (p_skip_runs) AND r.job <> ALL (p_skip_jobs)
           AND (v_moving IS NULL OR chronicle_shard(r.job, v_shards) <> ALL (v_moving))
           -- An anti join with the paused jobs (a few, read once), not a probe of jobs per run read.
           AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.paused)
           AND CASE WHEN r.ordering_key IS NULL THEN true ELSE ordering_head(r.job, r.ordering_key, r.ordering_seq) END
         ORDER BY r.available_at
         OFFSET 0
      ) k
     -- A key whose job's row is not here yet (a server's copy lags) counts as having room: the claim's
     -- count under the key's lock decides (lock_and_count_limits, 1 where the job is unknown).
     WHERE k.key_room IS NULL OR k.key_room > 0
     LIMIT p_limit;
END
$function$;

CREATE OR REPLACE FUNCTION public.run_lock_key(p_run_id text)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
RETURN stream_lock_key(run_stream_id(p_run_id));

CREATE OR REPLACE FUNCTION public.run_stream_id(p_run_id text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
RETURN ('run-'::text || p_run_id);

CREATE OR REPLACE FUNCTION public.stream_lock_key(p_stream_id text)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
RETURN hashtextextended(p_stream_id, (0)::bigint);

-- Triggers: none
