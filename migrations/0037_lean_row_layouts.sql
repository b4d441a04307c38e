-- The two tables every run transition writes, laid out for what a transition changes.
--
-- `runs`: a transition updates the row in place (HOT), and the WAL of an in-place update holds the
-- new version less the bytes it shares with the old one at its start and its end. The columns a run
-- never changes after its scheduling (its place, due time, attempt limit, partition) now come first;
-- those a claim and a completion change (revision, write time, lease, state, end, attempt, fencing
-- token, worker) follow, in the order that keeps the bytes each of the two leaves alone at one end;
-- the columns of a death last. Measured on PostgreSQL 15 with this table's shape: a claim's update
-- logs 146 bytes instead of 180, a completion's 117 instead of 175.
--
-- `events`: the fixed-width columns first, so that no byte pads a text column's end to the next
-- 8-byte boundary; and the request that caused an event, a UUID nearly always (the server makes one
-- when a caller sends none), in a `uuid` column of 16 bytes instead of 37 of text. A correlation id
-- of another shape, or a UUID not in lowercase canonical text, stays in `correlation_id`, so that
-- what is read back is what was written (metadata-columns.ts). A run event's row: about 33 bytes
-- smaller.
--
-- How: each table's partitions are detached, the table is made again with the new order, and each
-- partition goes back under it. An empty partition (every one of a new database's) is made again from
-- the new table, so it takes the new order; one that holds rows is attached as it is, keeping its
-- order (rows read the same whatever their partition's order), after a scan that checks its rows
-- belong to it. The default partition is always made again, its rows moved (a date's new partition is
-- filled from it column by column, createDatedPartition).

CREATE FUNCTION pg_temp.chronicle_partitions_detached(p_table regclass)
RETURNS TABLE (name text, bound text, options text[], holds_rows boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v record;
  v_rows boolean;
BEGIN
  FOR v IN SELECT c.oid, c.relname::text AS relname, pg_get_expr(c.relpartbound, c.oid) AS partbound, c.reloptions
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = p_table ORDER BY c.relname LOOP
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', v.relname) INTO v_rows;
    EXECUTE format('ALTER TABLE %s DETACH PARTITION %I', p_table, v.relname);
    name := v.relname; bound := v.partbound; options := v.reloptions; holds_rows := v_rows;
    RETURN NEXT;
  END LOOP;
END
$$;

CREATE FUNCTION pg_temp.chronicle_partitions_back(p_table regclass, p_partitions jsonb)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v record;
  v_with text;
  v_columns text;
BEGIN
  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO v_columns
    FROM pg_attribute WHERE attrelid = p_table AND attnum > 0 AND NOT attisdropped;
  FOR v IN SELECT * FROM jsonb_to_recordset(p_partitions) AS x(name text, bound text, options text[], holds_rows boolean) LOOP
    v_with := CASE WHEN v.options IS NULL THEN '' ELSE format(' WITH (%s)', array_to_string(v.options, ', ')) END;
    IF v.holds_rows AND v.bound <> 'DEFAULT' THEN
      EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I %s', p_table, v.name, v.bound);
    ELSIF v.holds_rows THEN
      EXECUTE format('ALTER TABLE %I RENAME TO %I', v.name, v.name || '_moved');
      EXECUTE format('CREATE TABLE %I PARTITION OF %s DEFAULT%s', v.name, p_table, v_with);
      EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM %I', v.name, v_columns, v_columns, v.name || '_moved');
      EXECUTE format('DROP TABLE %I', v.name || '_moved');
    ELSE
      EXECUTE format('DROP TABLE %I', v.name);
      EXECUTE format('CREATE TABLE %I PARTITION OF %s %s%s', v.name, p_table, v.bound, v_with);
    END IF;
  END LOOP;
END
$$;

-- runs

CREATE TEMPORARY TABLE chronicle_runs_partitions ON COMMIT DROP AS
  SELECT * FROM pg_temp.chronicle_partitions_detached('runs');
DROP TABLE runs;

CREATE TABLE runs (
  run_id           text COLLATE "C" NOT NULL,
  team             text NOT NULL,
  job              text COLLATE "C" NOT NULL,
  queue            text NOT NULL,
  priority         text NOT NULL,
  due_at           timestamptz NOT NULL,
  available_at     timestamptz NOT NULL,
  attempt_limit    integer NOT NULL,
  kept_on          date NOT NULL DEFAULT 'infinity',
  discarded        boolean NOT NULL DEFAULT false,
  revision         bigint NOT NULL,
  updated_at       timestamptz NOT NULL DEFAULT now(),
  lease_expires_at timestamptz,
  state            text NOT NULL,
  finished_at      timestamptz,
  attempt          integer NOT NULL,
  fencing_token    bigint,
  leased_at        timestamptz,
  worker_id        text,
  dead_at          timestamptz,
  last_error       text,
  death            jsonb,
  ended            text,
  CONSTRAINT runs_pkey PRIMARY KEY (run_id, kept_on),
  CONSTRAINT runs_priority_check CHECK (priority IN ('critical', 'default', 'bulk')),
  CONSTRAINT runs_state_check CHECK (state IN ('scheduled', 'leased', 'succeeded', 'retry_wait', 'dead', 'cancelled')),
  CONSTRAINT runs_ended_check CHECK (ended IS NOT DISTINCT FROM CASE WHEN state IN ('dead', 'cancelled') THEN state END)
) PARTITION BY LIST (kept_on);
CREATE INDEX runs_dlq_idx ON runs (team, dead_at DESC, run_id DESC) WHERE ended = 'dead' AND NOT discarded;
CREATE INDEX runs_ended_job_idx ON runs (job, due_at DESC, run_id DESC) WHERE ended IS NOT NULL;
CREATE INDEX runs_ended_team_idx ON runs (team, due_at DESC, run_id DESC) WHERE ended IS NOT NULL;

SELECT pg_temp.chronicle_partitions_back('runs', (SELECT jsonb_agg(to_jsonb(p)) FROM chronicle_runs_partitions p));

-- events

CREATE TEMPORARY TABLE chronicle_events_partitions ON COMMIT DROP AS
  SELECT * FROM pg_temp.chronicle_partitions_detached('events');
ALTER SEQUENCE events_global_position_seq OWNED BY NONE;
DROP TABLE events;

CREATE TABLE events (
  global_position  bigint NOT NULL DEFAULT nextval('events_global_position_seq'),
  transaction_id   xid8 NOT NULL DEFAULT pg_current_xact_id(),
  stream_revision  bigint NOT NULL,
  recorded_at      timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  event_id         uuid NOT NULL,
  correlation_uuid uuid,
  kept_on          date NOT NULL DEFAULT 'infinity',
  schema_version   smallint,
  stream_id        text COLLATE "C" NOT NULL,
  event_type       text NOT NULL,
  actor            text,
  team             text,
  correlation_id   text,
  data             json NOT NULL,
  metadata         json,
  CONSTRAINT events_pkey PRIMARY KEY (transaction_id, global_position, kept_on),
  CONSTRAINT events_stream_revision_key UNIQUE (stream_id, stream_revision, kept_on),
  CONSTRAINT events_event_type_check CHECK (event_type <> ''),
  CONSTRAINT events_stream_id_check CHECK (stream_id <> ''),
  CONSTRAINT events_stream_revision_check CHECK (stream_revision >= 0)
) PARTITION BY LIST (kept_on);
CREATE INDEX events_team_idx ON events (team, transaction_id, global_position) WHERE team IS NOT NULL;
ALTER SEQUENCE events_global_position_seq OWNED BY events.global_position;

-- A partition that holds rows gains the new column before it goes back (a catalog change only).
DO $$
DECLARE
  v record;
BEGIN
  FOR v IN SELECT name FROM chronicle_events_partitions WHERE holds_rows LOOP
    EXECUTE format('ALTER TABLE %I ADD COLUMN correlation_uuid uuid', v.name);
  END LOOP;
END
$$;
SELECT pg_temp.chronicle_partitions_back('events', (SELECT jsonb_agg(to_jsonb(p)) FROM chronicle_events_partitions p));

-- As in 0035, the insert writing the correlation id to the column of its shape (`cu`: a UUID).
CREATE OR REPLACE FUNCTION es_append(p_streams text[], p_expected bigint[], p_last_ids uuid[], p_events json)
 RETURNS TABLE(r_stream text, r_revision bigint, r_commit xid8, r_position bigint)
 LANGUAGE plpgsql
AS $$
DECLARE
  v_base bigint[];
  v_homes date[];
  v_bad bigint;
  v_bad_current bigint;
  v_bad_unexpected boolean;
  v_own_xid xid8 := pg_current_xact_id_if_assigned();
BEGIN
  -- The shard fence (above): shared with every other append, exclusive for a move's fence.
  PERFORM pg_advisory_xact_lock_shared(chronicle_shard_fence_key());
  IF EXISTS (SELECT 1 FROM moving_shards WHERE direction = 'out') THEN
    PERFORM chronicle_refuse_moving_out(p_streams, p_events);
  END IF;

  -- Lock first, write later (see 0001): sorted, and none for a stream expected not to exist.
  PERFORM pg_advisory_xact_lock(stream_lock_key(u.s))
     FROM unnest(p_streams, p_expected) AS u(s, e) WHERE u.e >= -3 AND u.e <> -1 ORDER BY u.s;

  WITH heads AS (
    SELECT u.i, u.s, u.e, u.l, h.stream_revision AS current, h.transaction_id AS writer, h.event_id AS last_id,
           h.kept_on AS home
      FROM unnest(p_streams, p_expected, p_last_ids) WITH ORDINALITY AS u(s, e, l, i)
      LEFT JOIN LATERAL (
        -- A new stream (-4) is not looked for: a one-time filter, so no partition is read for it.
        SELECT e.stream_revision, e.transaction_id, e.event_id, e.kept_on FROM events e
         WHERE u.e <> -4 AND e.stream_id = u.s ORDER BY e.stream_revision DESC LIMIT 1
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
    INSERT INTO events (event_id, stream_id, stream_revision, event_type, data, metadata, actor, team,
                        correlation_id, correlation_uuid, schema_version, kept_on)
    SELECT x.id, p_streams[x.s], v_base[x.s] + 1 + x.n, x.type, x.data, x.metadata, x.actor, x.team, x.cid, x.cu, x.sv,
           v_homes[x.s]
      FROM json_to_recordset(p_events)
        AS x(s int, n bigint, id uuid, type text, data json, metadata json, actor text, team text, cid text, cu uuid, sv smallint)
    RETURNING stream_id, stream_revision, global_position
  )
    SELECT i.stream_id, max(i.stream_revision), pg_current_xact_id(), max(i.global_position)
      FROM inserted i GROUP BY i.stream_id;
END
$$;
