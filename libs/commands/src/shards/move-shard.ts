import { setTimeout as delay } from 'node:timers/promises';
import type { Pool } from 'pg';
import { RUN_STREAM_PREFIX, RunEventType } from '@chronicle/domain';
import {
  comparePositions,
  type EventStore,
  type LogPosition,
  type RecordedEvent,
  SHARD_MAP_REFRESH_MS,
  START,
} from '@chronicle/event-store';
import { ConfigError, type JsonLogger, type Queryable, withTransaction } from '@chronicle/platform';
import {
  activityOf,
  type ActivityIncrement,
  loadCheckpoint,
  ProjectionRunner,
  RUN_PROJECTIONS,
  takeActivity,
} from '@chronicle/projections';
import { runSlot, shardOf } from './shard-of';

/** One side of a move: a server runs are kept on, its rows and its log. */
export interface ShardMoveEnd {
  readonly name: string;
  readonly pool: Pool;
  readonly eventStore: EventStore;
}

export interface ShardMoveRequest {
  /** The control database: the shard map. */
  readonly control: Pool;
  /** SHARDS of the deployment. */
  readonly shards: number;
  readonly shard: number;
  readonly source: ShardMoveEnd;
  readonly target: ShardMoveEnd;
  readonly logger: JsonLogger;
  /** Each step as it begins, for an operator watching (the CLI prints them). */
  readonly progress?: (step: string, figures?: Record<string, unknown>) => void;
  /** How long every process is given to read a change of the map (default: two reads and a half). */
  readonly mapReadMs?: number;
  /** Events read from the source's log at a time. */
  readonly batchSize?: number;
}

/** What a move did. */
export interface ShardMoveReport {
  readonly shard: number;
  readonly from: string;
  readonly to: string;
  /** The shard's epoch in the map from now on. */
  readonly epoch: number;
  readonly streams: number;
  readonly events: number;
  /** From the fence to the shard's runs claimable on the target: its runs' pause, that of claims included. */
  readonly pauseMs: number;
  readonly verified: { readonly streams: number; readonly events: number; readonly runs: number };
  /** Removed from the source once verified (the events and runs it no longer keeps). */
  readonly removed: { readonly events: number; readonly runs: number };
  readonly tookMs: number;
}

/** The stream in a server's log where a move's fence is recorded, among the events of the runs it moved. */
export const SHARD_MOVES_STREAM = 'shard-moves';
const FENCED = 'ShardMoveFenced';
const DEFAULT_BATCH = 2_000;
/** Streams read at a time when comparing the two logs or taking one's copy away. */
const STREAM_CHUNK = 500;
/** How long the fence waits for the transactions appending on the source before it gives up. */
const FENCE_LOCK_TIMEOUT = '10s';

/**
 * `chronicle shards move`: one logical shard's runs moved to another server while runs flow
 * (docs/sharding.md, "Moving a shard online"):
 *
 * 1. the map says the shard is moving to the target (`moving_to`), and the target holds it 'in'
 *    (moving_shards): its claims and every process's scheduler passes there leave the copies alone;
 * 2. the shard's streams are copied from the source's log to the target's, as recorded, while runs
 *    flow, until the copy is caught up; the target's projector builds their rows;
 * 3. the fence: the source refuses every append of a run of the shard, and an event in its log marks
 *    the point after which the shard has none (migrations/0034);
 * 4. the copy goes on to that event, and the target's projections to the last event copied;
 * 5. the target lets its claims take the shard's runs, and the map places the shard there under a new
 *    epoch: the pause ends (pauseMs);
 * 6. verify: every event of the shard on the source is on the target, the same, and every run's row on
 *    the source is there at its revision or later, the same where the revision is;
 * 7. once every process has read the map, the source's copy is taken away (its events, rows and counts)
 *    and its fence with it.
 *
 * A failure before step 5 undoes the move: the target's copy goes, the source is unfenced, the map
 * left as it was. A failure after it leaves the shard on the target and the source's copy in place
 * (and fenced), for the operator to look at.
 */
export async function moveShard(request: ShardMoveRequest): Promise<ShardMoveReport> {
  const { shard, shards, source, target } = request;
  const say = request.progress ?? (() => undefined);
  const started = Date.now();
  const mapReadMs = request.mapReadMs ?? Math.round(2.5 * SHARD_MAP_REFRESH_MS);
  await announce(request);
  const copy = new ShardCopy(request);
  let fencedAt: number | undefined;
  let epoch: number;
  let pauseMs: number;
  try {
    await target.pool.query(`INSERT INTO moving_shards (shard, shards, direction) VALUES ($1, $2, 'in')`, [
      shard,
      shards,
    ]);
    say('announced', { waitMs: mapReadMs });
    await delay(mapReadMs);
    for (let full = true; full;) full = await copy.next();
    say('copied while runs flow', { streams: copy.streams.size, events: copy.events });
    await fence(request);
    fencedAt = Date.now();
    say('fenced', {});
    while (!copy.fenceRead) await copy.next();
    await untilProjected(target, copy.lastWritten, request.logger);
    ({ epoch } = await swap(request));
    pauseMs = Date.now() - fencedAt;
    say('placed on the target', { epoch, pauseMs, streams: copy.streams.size, events: copy.events });
  } catch (err) {
    say('failed: undoing the move', { error: err instanceof Error ? err.message : String(err) });
    await undo(request, copy, fencedAt !== undefined).catch((undoErr: unknown) =>
      request.logger.error('the move could not be undone whole', { shard, error: String(undoErr) }),
    );
    throw err;
  }
  const verified = await verify(request, copy);
  say('verified', verified);
  await delay(mapReadMs);
  const removed = await takeAway(source, [...copy.streams], copy.fencePosition, request.logger, copy.activity);
  await unfence(source, shard);
  say('taken away from the source', removed);
  return {
    shard,
    from: source.name,
    to: target.name,
    epoch,
    streams: copy.streams.size,
    events: copy.events,
    pauseMs,
    verified,
    removed,
    tookMs: Date.now() - started,
  };
}

/** Step 1 in the control database, under the map's lock: refused unless the shard is on the source and still. */
async function announce({ control, shard, shards, source, target }: ShardMoveRequest): Promise<void> {
  if (!Number.isInteger(shard) || shard < 0 || shard >= shards)
    throw new ConfigError(`there is no shard ${shard}: shards are 0 to ${shards - 1}`);
  if (source.name === target.name) throw new ConfigError(`shard ${shard} is on ${target.name} already`);
  await withTransaction(control, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('shard-map', 0))");
    const { rows } = await tx.query<{ server: string; moving_to: string | null; retired: boolean | null }>(
      `SELECT m.server, m.moving_to, (SELECT s.retired_at IS NOT NULL FROM run_servers s WHERE s.name = $2) AS retired
         FROM shard_map m WHERE m.shard = $1`,
      [shard, target.name],
    );
    const row = rows[0];
    if (row === undefined) throw new ConfigError('there is no shard map: every run is in the control database');
    if (row.server !== source.name) throw new ConfigError(`shard ${shard} is on ${row.server}, not ${source.name}`);
    if (row.moving_to !== null) throw new ConfigError(`shard ${shard} is moving to ${row.moving_to} already`);
    if (row.retired === null) throw new ConfigError(`${target.name} is not among the run servers`);
    if (row.retired) throw new ConfigError(`${target.name} is retired (replaced by its standby)`);
    await tx.query('UPDATE shard_map SET moving_to = $2 WHERE shard = $1', [shard, target.name]);
  });
}

/**
 * The shard's streams read from the source's log in its order and written to the target's (steps 2
 * and 4). A run's stream is the shard's by its id's slot, or, for an id made before ids named slots,
 * by its first event's job. What the copied events add to the source's counts is kept, to take away
 * with them (takeAway).
 */
class ShardCopy {
  readonly streams = new Set<string>();
  events = 0;
  fenceRead = false;
  /** The fence's event in the source's log, once read. */
  fencePosition: LogPosition = START;
  lastWritten: LogPosition = START;
  readonly activity: ActivityIncrement[] = [];
  private from: LogPosition = START;
  private readonly batchSize: number;

  constructor(private readonly request: ShardMoveRequest) {
    this.batchSize = request.batchSize ?? DEFAULT_BATCH;
  }

  /** Copies the next batch; resolves with whether it was full (more may be there already). */
  async next(): Promise<boolean> {
    const { source, target, shard, shards } = this.request;
    const batch = await source.eventStore.readAll({ from: this.from, maxCount: this.batchSize });
    const taken: RecordedEvent[] = [];
    for (const event of batch) {
      if (event.streamId === SHARD_MOVES_STREAM && event.type === FENCED) {
        const data = event.data as { shard?: number; to?: string };
        if (data.shard === shard && data.to === target.name) {
          this.fenceRead = true;
          this.fencePosition = event.position;
        }
      }
      if (this.isTheShards(event, shard, shards)) taken.push(event);
    }
    if (taken.length > 0) {
      this.lastWritten = await target.eventStore.importEvents(taken);
      this.activity.push(...(await activityOf(source.pool, taken)));
      this.events += taken.length;
    }
    if (batch.length > 0) this.from = batch[batch.length - 1]!.position;
    return batch.length === this.batchSize;
  }

  private isTheShards(event: RecordedEvent, shard: number, shards: number): boolean {
    if (!event.streamId.startsWith(RUN_STREAM_PREFIX)) return false;
    if (this.streams.has(event.streamId)) return true;
    const slot = runSlot(event.streamId.slice(RUN_STREAM_PREFIX.length));
    const ours =
      slot !== undefined
        ? slot % shards === shard
        : event.revision === 0n &&
          event.type === RunEventType.RunScheduled &&
          shardOf((event.data as { job: string }).job, shards) === shard;
    if (ours) this.streams.add(event.streamId);
    return ours;
  }
}

/**
 * Step 3, in one transaction of the source: the fence's lock taken exclusively (migrations/0034: it
 * waits for every transaction that appended to end, and this transaction is given its id only after
 * it), the shard held 'out', so that every later append of its runs is refused, then the fence's
 * event, ordered in the log after every event of the shard that committed.
 */
async function fence({ source, target, shard, shards }: ShardMoveRequest): Promise<void> {
  await source.eventStore.unitOfWork(source.pool, async (work) => {
    if (!work.atomic) throw new ConfigError("a shard moves between servers whose log is in the runs' database");
    await work.tx.query(`SET LOCAL lock_timeout = '${FENCE_LOCK_TIMEOUT}'`);
    await work.tx.query('SELECT pg_advisory_xact_lock(chronicle_shard_fence_key())');
    await work.tx.query(
      `INSERT INTO moving_shards (shard, shards, direction) VALUES ($1, $2, 'out')
         ON CONFLICT (shard) DO UPDATE SET direction = 'out', since = now()`,
      [shard, shards],
    );
    await work.append([
      {
        streamId: SHARD_MOVES_STREAM,
        expected: 'any',
        events: [
          {
            type: FENCED,
            data: { shard, shards, from: source.name, to: target.name },
            metadata: { actor: 'operator:shards-move' },
          },
        ],
      },
    ]);
  });
}

/** The fence lifted: the shard no longer held 'out'. */
async function unfence(source: ShardMoveEnd, shard: number): Promise<void> {
  await source.pool.query('DELETE FROM moving_shards WHERE shard = $1', [shard]);
}

/**
 * Until the run projections of `end` are at `position` of its log or past it: its projector (in the
 * scheduler's processes) does it; where none is running, this process catches them up itself (the
 * checkpoints' compare-and-set keeps two runners from applying a batch twice).
 */
async function untilProjected(end: ShardMoveEnd, position: LogPosition, logger: JsonLogger): Promise<void> {
  const runner = new ProjectionRunner(end.eventStore, end.pool, RUN_PROJECTIONS, logger);
  for (let waited = 0; ; waited += 50) {
    const checkpoints = await Promise.all(RUN_PROJECTIONS.map((p) => loadCheckpoint(end.pool, p.name)));
    if (checkpoints.every((c) => c !== undefined && comparePositions(c.position, position) >= 0)) return;
    if (waited >= 500) {
      await runner.catchUp().catch(() => undefined);
      waited = 0;
    } else await delay(50);
  }
}

/** Step 5: the target's claims take the shard's runs, and the map places them there. */
async function swap({ control, target, shard }: ShardMoveRequest): Promise<{ epoch: number }> {
  await target.pool.query('DELETE FROM moving_shards WHERE shard = $1', [shard]);
  return withTransaction(control, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('shard-map', 0))");
    const { rows } = await tx.query<{ epoch: string }>(
      `UPDATE shard_map SET server = $2, epoch = epoch + 1, moving_to = NULL, placed_at = now()
        WHERE shard = $1 RETURNING epoch`,
      [shard, target.name],
    );
    return { epoch: Number(rows[0]!.epoch) };
  });
}

/** Step 6: the source, fenced, against the target; throws naming the first difference. */
async function verify(
  { source, target, shard, shards }: ShardMoveRequest,
  copy: ShardCopy,
): Promise<ShardMoveReport['verified']> {
  const ids = [...copy.streams];
  let events = 0;
  for (let i = 0; i < ids.length; i += STREAM_CHUNK) {
    const chunk = ids.slice(i, i + STREAM_CHUNK);
    const [before, after] = await Promise.all([
      source.eventStore.readStreams(chunk),
      target.eventStore.readStreams(chunk),
    ]);
    for (const id of chunk) {
      const there = after.get(id) ?? [];
      for (const [n, event] of (before.get(id) ?? []).entries()) {
        if (!sameEvent(event, there[n])) throw new Error(`verify: event ${n} of ${id} differs on ${target.name}`);
        events++;
      }
    }
  }
  const [was, is] = await Promise.all([runRows(source.pool, shard, shards), runRows(target.pool, shard, shards)]);
  for (const [runId, row] of was) {
    const moved = is.get(runId);
    if (
      moved === undefined ||
      moved.revision < row.revision ||
      (moved.revision === row.revision && moved.digest !== row.digest)
    )
      throw new Error(`verify: the row of run ${runId} on ${target.name} is not the one on ${source.name}`);
  }
  return { streams: ids.length, events, runs: was.size };
}

function sameEvent(a: RecordedEvent, b: RecordedEvent | undefined): boolean {
  return (
    b !== undefined &&
    a.id === b.id &&
    a.revision === b.revision &&
    a.type === b.type &&
    a.recordedAt.getTime() === b.recordedAt.getTime() &&
    JSON.stringify(a.data) === JSON.stringify(b.data) &&
    JSON.stringify(a.metadata) === JSON.stringify(b.metadata)
  );
}

/** The rows of the shard's runs on a server: revision and a digest of what the run's row says. */
async function runRows(
  db: Queryable,
  shard: number,
  shards: number,
): Promise<Map<string, { revision: number; digest: string }>> {
  const { rows } = await db.query<{ run_id: string; revision: string; digest: string }>(
    `SELECT r.run_id, r.revision, md5(row(r.state, r.available_at, r.due_at, r.attempt, r.lease_expires_at, r.dead_at,
            r.discarded, r.fencing_token, r.worker_id, r.leased_at, r.last_error, r.finished_at)::text) AS digest
       FROM runs r WHERE chronicle_shard(r.job, $2) = $1`,
    [shard, shards],
  );
  return new Map(rows.map((r) => [r.run_id, { revision: Number(r.revision), digest: r.digest }]));
}

/**
 * A server's copy of runs taken away, once its projections are at `projectedTo` (its last event of
 * them): what their events added to its counts, their rows, then their streams. `counted`: those
 * counts where known already (the source's, kept as it copied); else they are read back from the
 * streams. By the runs' ids, never by shard: the control database may hold runs of the shard made
 * before the map, which stay.
 */
async function takeAway(
  end: ShardMoveEnd,
  streamIds: readonly string[],
  projectedTo: LogPosition,
  logger: JsonLogger,
  counted?: readonly ActivityIncrement[],
): Promise<{ events: number; runs: number }> {
  await untilProjected(end, projectedTo, logger);
  let activity = counted;
  if (activity === undefined) {
    const found: ActivityIncrement[] = [];
    for (let i = 0; i < streamIds.length; i += STREAM_CHUNK) {
      const streams = await end.eventStore.readStreams(streamIds.slice(i, i + STREAM_CHUNK));
      found.push(...(await activityOf(end.pool, [...streams.values()].flat())));
    }
    activity = found;
  }
  const runIds = streamIds.map((id) => id.slice(RUN_STREAM_PREFIX.length));
  const runs = await withTransaction(end.pool, async (tx) => {
    await takeActivity(tx, activity);
    for (const table of ['ready_runs', 'run_leases', 'run_listing'])
      await tx.query(`DELETE FROM ${table} WHERE run_id = ANY($1::text[])`, [runIds]);
    const { rowCount } = await tx.query('DELETE FROM runs WHERE run_id = ANY($1::text[])', [runIds]);
    return rowCount ?? 0;
  });
  let events = 0;
  for (let i = 0; i < streamIds.length; i += STREAM_CHUNK)
    events += await end.eventStore.removeStreams(streamIds.slice(i, i + STREAM_CHUNK));
  return { events, runs };
}

/** A failure before the swap: the target's copy taken away, the source unfenced, the map as it was. */
async function undo(request: ShardMoveRequest, copy: ShardCopy, fenced: boolean): Promise<void> {
  const { control, target, source, shard, logger } = request;
  await takeAway(target, [...copy.streams], copy.lastWritten, logger);
  await target.pool.query('DELETE FROM moving_shards WHERE shard = $1', [shard]);
  if (fenced) await unfence(source, shard);
  await control.query('UPDATE shard_map SET moving_to = NULL WHERE shard = $1 AND moving_to = $2', [
    shard,
    target.name,
  ]);
}
