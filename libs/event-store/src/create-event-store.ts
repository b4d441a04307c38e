import type { Pool } from 'pg';
import { createPool, migrate, type Config } from '@chronicle/platform';
import type { EventStore } from './event-store.port';
import type * as KurrentAdapter from './kurrentdb/kurrentdb.event-store';
import { PostgresEventStore } from './postgres/postgres.event-store';

/**
 * The store the configuration asks for, beside the read models' pool. The
 * KurrentDB module (and its gRPC native parts) is loaded only when asked
 * for, so PostgreSQL-only installs never load it. A PostgreSQL log in a
 * database of its own (EVENT_STORE_URL) is migrated and gets a pool of its
 * own, which the store closes.
 */
export async function createEventStore(config: Config, readModels: Pool): Promise<EventStore> {
  switch (config.eventStore) {
    case 'postgres': {
      if (config.eventStoreUrl === undefined || config.eventStoreUrl === config.databaseUrl)
        return new PostgresEventStore(readModels);
      await migrate(config.eventStoreUrl);
      const log = createPool({
        connectionString: config.eventStoreUrl,
        max: config.pgPoolSize,
        applicationName: 'scheduler-event-log',
      });
      return new PostgresEventStore(log, { ownsPool: true });
    }
    case 'kurrentdb': {
      // require, not import(): a relative import() in CommonJS output would go through ESM resolution.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const kurrent = require('./kurrentdb/kurrentdb.event-store') as typeof KurrentAdapter;
      return kurrent.createKurrentDbEventStore(config.kurrentDbConnectionString ?? '');
    }
    default: {
      const unknown: never = config.eventStore;
      throw new Error(`unknown event store ${String(unknown)}`);
    }
  }
}
