-- Moving a logical shard from one run server to another while runs flow (`chronicle shards move`,
-- docs/sharding.md, "Moving a shard online").
--
-- In the control database, `shard_map.moving_to` names the server a shard is being copied to: every
-- process reads it with the map (each second), and the scheduler's passes on that server leave the
-- shard's runs alone until the map places the shard there.
--
-- On the two servers, `moving_shards` holds the shard while it moves: on the target ('in') from the
-- start of the copy until the map is swapped, on the source ('out') from the fence on. Claims on a
-- server step over the runs of the shards it holds there (ready_runs_of below): the target's copies
-- are not leased before they are the shard's runs, nor the source's once they are fenced. One row per
-- shard at most; an empty table, as it nearly always is, costs a claim one read of it per group.
--
-- The fence is in es_append: each append takes the fence's lock shared (a lock in memory, held to
-- its transaction's end), and while a shard is held 'out' on this server, refuses the events of the
-- shard's runs with SQLSTATE SH503, which the API answers as `503 /problems/shard-unavailable` (try
-- again in a second, by when the map names the new server). A move fences by taking that lock
-- exclusively: it waits for every transaction that appended to end, holds new appends back for the
-- moment it inserts the 'out' row and appends its own event, and then each append sees the row. So
-- every event of the shard that committed is in the log ahead of the fence's event, and none after
-- it. Nothing here changes a table's definition, so a fence under load takes no lock a query waits on.

ALTER TABLE shard_map ADD COLUMN moving_to text REFERENCES run_servers (name);

CREATE TABLE moving_shards (
  shard     integer NOT NULL CHECK (shard >= 0),
  -- SHARDS of the deployment: chronicle_shard(job, shards) = shard are the shard's runs.
  shards    integer NOT NULL CHECK (shards > shard),
  direction text NOT NULL CHECK (direction IN ('in', 'out')),
  since     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (shard)
);

-- The key of the fence's lock (an advisory lock: shared by appends, exclusive for a fence).
CREATE FUNCTION chronicle_shard_fence_key() RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN hashtextextended('shard-fence', 0);

-- The slot a run id names (libs/commands/src/shards/shard-of.ts, runSlot): hex 13-15 of a UUIDv8
-- run id; null for an id made before run ids named their slot.
CREATE FUNCTION chronicle_run_slot(p_run_id text) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN CASE WHEN p_run_id ~ '^run_[0-9a-f]{12}8[0-9a-f]{3}[89ab][0-9a-f]{15}$'
              THEN ('x' || substr(p_run_id, 18, 3))::bit(12)::integer END;

-- Refuses an append with events of a run of a shard held 'out' here. A run's shard by its id's slot,
-- else by its job: the RunScheduled that begins its stream, or its row.
CREATE FUNCTION chronicle_refuse_moving_out(p_streams text[], p_events json) RETURNS void
  LANGUAGE plpgsql AS $$
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
$$;

-- As in 0026, with the runs of the shards moving in or out of this server stepped over.
CREATE OR REPLACE FUNCTION ready_runs_of(
  p_queue text, p_team text, p_priority text,
  p_until timestamptz,
  p_skip_runs text[], p_skip_jobs text[],
  p_limit integer)
RETURNS TABLE (run_id text, job text, team text, priority text, available_at timestamptz)
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
SET enable_seqscan = off
SET enable_sort = off
AS $$
DECLARE
  v_moving integer[];
  v_shards integer;
BEGIN
  SELECT array_agg(m.shard), max(m.shards) INTO v_moving, v_shards FROM moving_shards m;
  IF v_moving IS NULL THEN
    RETURN QUERY
      SELECT r.run_id::text, r.job::text, r.team, r.priority, r.available_at FROM ready_runs r
       WHERE r.queue = p_queue AND r.team = p_team AND r.priority = p_priority AND r.available_at <= p_until
         AND r.run_id <> ALL (p_skip_runs) AND r.job <> ALL (p_skip_jobs)
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.paused)
       ORDER BY r.available_at
       LIMIT p_limit;
  ELSE
    RETURN QUERY
      SELECT r.run_id::text, r.job::text, r.team, r.priority, r.available_at FROM ready_runs r
       WHERE r.queue = p_queue AND r.team = p_team AND r.priority = p_priority AND r.available_at <= p_until
         AND r.run_id <> ALL (p_skip_runs) AND r.job <> ALL (p_skip_jobs)
         AND chronicle_shard(r.job, v_shards) <> ALL (v_moving)
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.paused)
       ORDER BY r.available_at
       LIMIT p_limit;
  END IF;
END
$$;

-- As in 0030, with the shard fence first.
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
    INSERT INTO events (event_id, stream_id, stream_revision, event_type, data, metadata, kept_on)
    SELECT x.id, p_streams[x.s], v_base[x.s] + 1 + x.n, x.type, x.data, coalesce(x.metadata, '{}'::json), v_homes[x.s]
      FROM json_to_recordset(p_events) AS x(s int, n bigint, id uuid, type text, data json, metadata json)
    RETURNING stream_id, stream_revision, global_position
  )
    SELECT i.stream_id, max(i.stream_revision), pg_current_xact_id(), max(i.global_position)
      FROM inserted i GROUP BY i.stream_id;
END
$$;
