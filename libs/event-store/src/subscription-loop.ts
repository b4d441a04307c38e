import type { LogPosition, RecordedEvent } from './event-store.port';

export interface PollingSubscriptionOptions {
  readonly from: LogPosition;
  readonly batchSize: number;
  readonly signal: AbortSignal | undefined;
  /** Longest wait between reads when caught up; a wake-up cuts it short. */
  readonly idleWaitMs: number;
  readonly readBatch: (from: LogPosition, maxCount: number) => Promise<readonly RecordedEvent[]>;
  readonly waitForAppend: (timeoutMs: number, signal: AbortSignal | undefined) => Promise<unknown>;
}

/**
 * Catch-up by reading: history first in full batches, then a read after every
 * local append or idle timeout. Shared by the PostgreSQL and in-memory stores.
 */
export async function* pollAll(options: PollingSubscriptionOptions): AsyncGenerator<readonly RecordedEvent[]> {
  let from = options.from;
  while (options.signal?.aborted !== true) {
    const batch = await options.readBatch(from, options.batchSize);
    if (batch.length > 0) {
      from = batch[batch.length - 1]!.position;
      yield batch;
      if (batch.length === options.batchSize) continue;
    }
    await options.waitForAppend(options.idleWaitMs, options.signal);
  }
}
