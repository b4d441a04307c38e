import type { Pool } from 'pg';
import type { BulkIo } from '../projection';
import { inSchema } from './shadow-tables.sql';

/** A bulk build's io on one shadow schema, and the wait for its writes. */
export interface ShadowIo extends BulkIo {
  /** Resolves once every write queued has committed; rejects with the first that failed. */
  drained(): Promise<void>;
}

/**
 * Writes into `schema` one after another, each in a transaction of its own (inSchema: the shadow
 * first in the search path, no wait for the flush), in the background; reads behind them.
 */
export function shadowIo(pool: Pool, schema: string): ShadowIo {
  let tail: Promise<void> = Promise.resolve();
  return {
    async write(work) {
      const previous = tail;
      tail = previous.then(() => inSchema(pool, schema, work));
      tail.catch(() => undefined); // seen by the next write, read or drained()
      await previous;
    },
    async read(work) {
      await tail;
      return inSchema(pool, schema, work);
    },
    drained: () => tail,
  };
}
