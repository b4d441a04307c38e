import type { Pool, PoolClient } from 'pg';
import type { EventStore, LogPosition, RecordedEvent } from '@chronicle/event-store';
import { withTransaction, type JsonLogger } from '@chronicle/platform';
import { type Projection, advanceCheckpoint, loadCheckpoint, resetCheckpoint } from '@chronicle/projections';

export interface ProjectionRunnerOptions {
  readonly batchSize?: number;
  /** Wait before retrying after a failed batch, and between tries for the lock while another runner is active. */
  readonly retryDelayMs?: number;
}

/** Another runner moved the checkpoint under us: give the batch back and start over. */
class CheckpointMovedError extends Error {}

/**
 * Runs one projection: reads the global log from its checkpoint in batches and
 * applies each batch and the new checkpoint in one transaction, so a crash
 * neither skips nor half-applies a batch. One runner is active per projection
 * (an advisory lock); the checkpoint's compare-and-set keeps it correct even
 * if two ever run.
 */
export class ProjectionRunner {
  private readonly batchSize: number;
  private readonly retryDelayMs: number;

  constructor(
    private readonly eventStore: EventStore,
    private readonly pool: Pool,
    private readonly projection: Projection,
    private readonly logger: JsonLogger,
    options: ProjectionRunnerOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 500;
    this.retryDelayMs = options.retryDelayMs ?? 1000;
  }

  /** Until `signal` aborts: hold the projection's lock, then follow the log. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let lockHolder: PoolClient | undefined;
      try {
        lockHolder = await this.tryLock();
        if (lockHolder === undefined) {
          await delay(this.retryDelayMs, signal);
          continue;
        }
        let from = await this.prepare();
        for await (const batch of this.eventStore.subscribeToAll({ from, batchSize: this.batchSize, signal })) {
          from = await this.applyBatch(from, batch);
        }
      } catch (err) {
        if (signal.aborted) break;
        this.logger.error('projection batch failed; retrying from the checkpoint', {
          projection: this.projection.name,
          err: String(err),
        });
        await delay(this.retryDelayMs, signal);
      } finally {
        await this.unlock(lockHolder);
      }
    }
  }

  /** Apply everything readable now; resolves with the number of events read. */
  async catchUp(): Promise<number> {
    let from = await this.prepare();
    let read = 0;
    while (true) {
      const batch = await this.eventStore.readAll({ from, maxCount: this.batchSize });
      if (batch.length === 0) return read;
      from = await this.applyBatch(from, batch);
      read += batch.length;
    }
  }

  /** The position to resume from; a new or changed projection starts over, emptied. */
  private async prepare(): Promise<LogPosition> {
    const stored = await loadCheckpoint(this.pool, this.projection.name);
    if (stored !== undefined && stored.version === this.projection.version) return stored.position;
    this.logger.info('building projection from the start of the log', {
      projection: this.projection.name,
      version: this.projection.version,
    });
    await withTransaction(this.pool, async (tx) => {
      await this.projection.reset(tx);
      await resetCheckpoint(tx, this.projection.name, this.projection.version);
    });
    return (await loadCheckpoint(this.pool, this.projection.name))!.position;
  }

  private async applyBatch(from: LogPosition, batch: readonly RecordedEvent[]): Promise<LogPosition> {
    const to = batch[batch.length - 1]!.position;
    const types = this.projection.eventTypes;
    const relevant = types === 'all' ? batch : batch.filter((e) => types.has(e.type));
    await withTransaction(this.pool, async (tx) => {
      if (relevant.length > 0) await this.projection.apply(tx, relevant);
      if (!(await advanceCheckpoint(tx, this.projection.name, from, to)))
        throw new CheckpointMovedError('checkpoint moved by another runner');
    });
    return to;
  }

  private async tryLock(): Promise<PoolClient | undefined> {
    const client = await this.pool.connect();
    const { rows } = await client.query<{ locked: boolean }>(
      "SELECT pg_try_advisory_lock(hashtextextended('projection:' || $1, 0)) AS locked",
      [this.projection.name],
    );
    if (rows[0]?.locked === true) return client;
    client.release();
    return undefined;
  }

  private async unlock(client: PoolClient | undefined): Promise<void> {
    if (client === undefined) return;
    try {
      await client.query("SELECT pg_advisory_unlock(hashtextextended('projection:' || $1, 0))", [this.projection.name]);
      client.release();
    } catch (err) {
      client.release(err as Error);
    }
  }
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
