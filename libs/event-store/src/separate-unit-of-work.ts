import type { Pool } from 'pg';
import { withTransaction } from '@chronicle/platform';
import type { EventStore, UnitOfWork, UnitOfWorkOptions } from './event-store.port';

/**
 * The unit of work of a log that shares no transaction with the read models
 * (KurrentDB, in-memory, a PostgreSQL log in another database): appends
 * commit on their own, the rows in the read models' transaction after them;
 * `onCommittedAppend` hears of each append once it has committed.
 */
export function separateUnitOfWork<T>(
  store: Pick<EventStore, 'appendToStreams'>,
  readModels: Pool,
  work: (uow: UnitOfWork) => Promise<T>,
  options: UnitOfWorkOptions = {},
): Promise<T> {
  return withTransaction(
    readModels,
    (tx) =>
      work({
        tx,
        atomic: false,
        append: async (appends, writeThrough) => {
          const results = await store.appendToStreams(appends);
          options.onCommittedAppend?.(results);
          if (writeThrough !== undefined) await tx.query(writeThrough);
          return results;
        },
      }),
    { genericPlans: true },
  );
}
