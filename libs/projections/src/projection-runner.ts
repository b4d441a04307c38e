import type { Pool, PoolClient } from 'pg';
import { comparePositions, type EventStore, type LogPosition, type RecordedEvent } from '@chronicle/event-store';
import { inSpan, type Queryable, withTransaction, type JsonLogger, PassFailures } from '@chronicle/platform';
import { Registry } from 'prom-client';
import {
  type CheckpointMove,
  advanceCheckpoints,
  loadCheckpoint,
  resetCheckpoint,
} from './checkpoints/projection-checkpoints.sql';
import type { Projection } from './projection';

export interface ProjectionRunnerOptions {
  readonly batchSize?: number;
  /** Wait before retrying after a failed batch, and between tries for the lock while another runner is active. */
  readonly retryDelayMs?: number;
  /**
   * An active runner silent this long (no heartbeat on its lock's session: a stopped process, a
   * machine paused) has its session ended by a waiting one, which takes over. Default 10 s.
   */
  readonly stalledAfterMs?: number;
  /**
   * Where the runner's failures are counted (chronicle_pass_failures_total{pass="projector"}): the
   * process's registry. Default: one of its own, seen by nobody.
   */
  readonly registry?: Registry;
}

/** The active runner's heartbeat on its lock's session, which shows in pg_stat_activity.state_change. */
const HEARTBEAT_MS = 1_000;

/** Another runner moved a checkpoint under us: give the batch back and start over. */
class CheckpointMovedError extends Error {}

/**
 * Runs projections from one reader of the global log: each batch is read
 * once and applied to every projection not already past it, with each
 * projection's new checkpoint, in one transaction, so a crash neither skips
 * nor half-applies a batch. Each projection keeps its own checkpoint (a
 * rebuilt one starts from the beginning while the others skip what they
 * have). One runner is active per set of projections (an advisory lock);
 * the checkpoints' compare-and-set keeps it correct even if two ever run.
 *
 * A runner that dies loses the lock with its session, and a waiting one takes
 * it at its next try. One that stalls (SIGSTOP, a paused machine) keeps its
 * session: it heartbeats on it every second, and a waiting runner that finds
 * it silent for `stalledAfterMs` ends that session (pg_terminate_backend) and
 * takes the lock. A batch's transaction may stay idle no longer than that
 * either, so a stall mid-batch holds no rows; and resumed, the stalled runner
 * finds its lock gone or its checkpoints moved, and waits.
 */
export class ProjectionRunner {
  private readonly projections: readonly Projection[];
  private readonly batchSize: number;
  private readonly retryDelayMs: number;
  private readonly lockName: string;
  private readonly stalledAfterMs: number;
  /** A failed batch: logged, counted, and the wait before the next try doubles while they fail. */
  private readonly failures: PassFailures;

  constructor(
    private readonly eventStore: EventStore,
    private readonly pool: Pool,
    projections: Projection | readonly Projection[],
    private readonly logger: JsonLogger,
    options: ProjectionRunnerOptions = {},
  ) {
    this.projections = Array.isArray(projections) ? projections : [projections as Projection];
    this.batchSize = options.batchSize ?? 500;
    this.retryDelayMs = options.retryDelayMs ?? 1000;
    this.lockName = `projection:${this.projections.map((p) => p.name).join(',')}`;
    this.stalledAfterMs = options.stalledAfterMs ?? 10_000;
    this.failures = new PassFailures({
      name: 'projector',
      intervalMs: this.retryDelayMs,
      maxBackoffMs: this.stalledAfterMs,
      message: 'projection batch failed; retrying from the checkpoint',
      logger: this.logger,
      registry: options.registry ?? new Registry(),
    });
  }

  /** Until `signal` aborts: hold the projections' lock, then follow the log. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let lockHolder: PoolClient | undefined;
      let heartbeat: NodeJS.Timeout | undefined;
      try {
        lockHolder = await this.tryLock();
        if (lockHolder === undefined) {
          await this.endStalledHolder();
          await delay(this.retryDelayMs, signal);
          continue;
        }
        this.logger.info('projections active in this process', { projections: this.projections.map((p) => p.name) });
        // The lock's session lost (ended as stalled, or the server restarted): stop following the log.
        const lost = new AbortController();
        const holder = lockHolder;
        heartbeat = setInterval(
          () => void holder.query('SELECT 1').catch((err: unknown) => lost.abort(err)),
          HEARTBEAT_MS,
        );
        const following = AbortSignal.any([signal, lost.signal]);
        let positions = await this.prepare();
        const from = earliest(positions);
        for await (const batch of this.eventStore.subscribeToAll({
          from,
          batchSize: this.batchSize,
          signal: following,
        })) {
          positions = await this.applyBatch(positions, batch);
          this.failures.succeeded();
        }
        if (lost.signal.aborted)
          throw new Error("the projections' lock was lost with its session", { cause: lost.signal.reason });
      } catch (err) {
        if (signal.aborted) break;
        const wait = this.failures.failed(err, { projections: this.projections.map((p) => p.name) });
        await delay(wait, signal);
      } finally {
        clearInterval(heartbeat);
        await this.unlock(lockHolder);
      }
    }
  }

  /** Ends the session of an active runner silent for stalledAfterMs (see the class), so that the lock is free. */
  private async endStalledHolder(): Promise<void> {
    const { rows } = await this.pool.query<{ pid: number; ended: boolean }>(
      `WITH k AS (SELECT hashtextextended($1, 0) AS key)
       SELECT a.pid, pg_terminate_backend(a.pid) AS ended
         FROM k, pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid::bigint = ((k.key >> 32) & 4294967295) AND l.objid::bigint = (k.key & 4294967295)
          AND a.state = 'idle' AND a.state_change < now() - $2::interval`,
      [this.lockName, `${this.stalledAfterMs} milliseconds`],
    );
    for (const row of rows)
      this.logger.warn('the active projector was silent; its session ended, taking over', {
        projections: this.projections.map((p) => p.name),
        backendPid: row.pid,
        silentForMs: this.stalledAfterMs,
        ended: row.ended,
      });
  }

  /** Apply everything readable now; resolves with the number of events read. */
  async catchUp(): Promise<number> {
    let positions = await this.prepare();
    let read = 0;
    while (true) {
      const batch = await this.eventStore.readAll({ from: earliest(positions), maxCount: this.batchSize });
      if (batch.length === 0) return read;
      positions = await this.applyBatch(positions, batch);
      read += batch.length;
    }
  }

  /**
   * Each projection's position to resume from; a new or changed projection starts over from the start of
   * the log. A changed one (another version) starts from emptied tables. A new one written through keeps
   * its tables as they are: they hold only rows commands wrote with their events, which it folds over by
   * revision; emptied, a run enqueued and leased before this runner's first start would read as absent
   * until the runner replayed its events (a completion answered 404).
   */
  private async prepare(): Promise<LogPosition[]> {
    return Promise.all(
      this.projections.map(async (projection) => {
        const stored = await loadCheckpoint(this.pool, projection.name);
        if (stored !== undefined && stored.version === projection.version) return stored.position;
        this.logger.info('building projection from the start of the log', {
          projection: projection.name,
          version: projection.version,
        });
        await withTransaction(this.pool, async (tx) => {
          if (stored !== undefined || !projection.writtenThrough) await projection.reset(tx);
          await resetCheckpoint(tx, projection.name, projection.version);
        });
        return (await loadCheckpoint(this.pool, projection.name))!.position;
      }),
    );
  }

  private applyBatch(positions: readonly LogPosition[], batch: readonly RecordedEvent[]): Promise<LogPosition[]> {
    return inSpan('chronicle.project', { 'chronicle.events': batch.length }, () =>
      this.applyInTransaction(positions, batch),
    );
  }

  private async applyInTransaction(
    positions: readonly LogPosition[],
    batch: readonly RecordedEvent[],
  ): Promise<LogPosition[]> {
    const to = batch[batch.length - 1]!.position;
    await withTransaction(
      this.pool,
      async (tx) => {
        // Stalled mid-batch, the transaction is ended before a waiting runner takes over: it holds no rows then.
        await tx.query("SELECT set_config('idle_in_transaction_session_timeout', $1, true)", [
          String(this.stalledAfterMs),
        ]);
        const moves: CheckpointMove[] = [];
        for (const [i, projection] of this.projections.entries()) {
          const from = positions[i]!;
          if (comparePositions(from, to) >= 0) continue;
          await applyTo(tx, projection, batch, from);
          moves.push({ projection: projection.name, from, to });
        }
        if (!(await advanceCheckpoints(tx, moves)))
          throw new CheckpointMovedError(
            `a checkpoint of ${moves.map((m) => m.projection).join(', ')} moved by another runner`,
          );
      },
      { genericPlans: true },
    );
    return positions.map((from) => (comparePositions(from, to) >= 0 ? from : to));
  }

  private async tryLock(): Promise<PoolClient | undefined> {
    const client = await this.pool.connect();
    const { rows } = await client.query<{ locked: boolean }>(
      'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
      [this.lockName],
    );
    if (rows[0]?.locked === true) return client;
    client.release();
    return undefined;
  }

  private async unlock(client: PoolClient | undefined): Promise<void> {
    if (client === undefined) return;
    try {
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [this.lockName]);
      client.release();
    } catch (err) {
      client.release(err as Error);
    }
  }
}

/** The events of the batch after the projection's checkpoint, of the types it takes. */
async function applyTo(
  tx: Queryable,
  projection: Projection,
  batch: readonly RecordedEvent[],
  from: LogPosition,
): Promise<void> {
  const types = projection.eventTypes;
  const relevant = batch.filter(
    (e) => (types === 'all' || types.has(e.type)) && comparePositions(e.position, from) > 0,
  );
  if (relevant.length > 0) await projection.apply(tx, relevant);
}

function earliest(positions: readonly LogPosition[]): LogPosition {
  return positions.reduce((a, b) => (comparePositions(a, b) <= 0 ? a : b));
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
