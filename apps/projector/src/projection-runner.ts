import type { Pool, PoolClient } from 'pg';
import { comparePositions, type EventStore, type LogPosition, type RecordedEvent } from '@chronicle/event-store';
import { type Queryable, withTransaction, type JsonLogger } from '@chronicle/platform';
import {
  type CheckpointMove,
  type Projection,
  advanceCheckpoints,
  loadCheckpoint,
  resetCheckpoint,
} from '@chronicle/projections';

export interface ProjectionRunnerOptions {
  readonly batchSize?: number;
  /** Wait before retrying after a failed batch, and between tries for the lock while another runner is active. */
  readonly retryDelayMs?: number;
}

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
 */
export class ProjectionRunner {
  private readonly projections: readonly Projection[];
  private readonly batchSize: number;
  private readonly retryDelayMs: number;
  private readonly lockName: string;

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
  }

  /** Until `signal` aborts: hold the projections' lock, then follow the log. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let lockHolder: PoolClient | undefined;
      try {
        lockHolder = await this.tryLock();
        if (lockHolder === undefined) {
          await delay(this.retryDelayMs, signal);
          continue;
        }
        this.logger.info('projections active in this process', { projections: this.projections.map((p) => p.name) });
        let positions = await this.prepare();
        const from = earliest(positions);
        for await (const batch of this.eventStore.subscribeToAll({ from, batchSize: this.batchSize, signal })) {
          positions = await this.applyBatch(positions, batch);
        }
      } catch (err) {
        if (signal.aborted) break;
        this.logger.error('projection batch failed; retrying from the checkpoint', {
          projections: this.projections.map((p) => p.name),
          err,
        });
        await delay(this.retryDelayMs, signal);
      } finally {
        await this.unlock(lockHolder);
      }
    }
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

  /** Each projection's position to resume from; a new or changed projection starts over, emptied. */
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
          await projection.reset(tx);
          await resetCheckpoint(tx, projection.name, projection.version);
        });
        return (await loadCheckpoint(this.pool, projection.name))!.position;
      }),
    );
  }

  private async applyBatch(positions: readonly LogPosition[], batch: readonly RecordedEvent[]): Promise<LogPosition[]> {
    const to = batch[batch.length - 1]!.position;
    await withTransaction(this.pool, async (tx) => {
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
    });
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
