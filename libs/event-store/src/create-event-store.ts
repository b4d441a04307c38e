import type { Pool } from 'pg';
import type { Config } from '@chronicle/platform';
import type { EventStore } from './event-store.port';
import type * as KurrentAdapter from './kurrentdb/kurrentdb.event-store';
import { PostgresEventStore } from './postgres/postgres.event-store';

/**
 * The store the configuration asks for. The KurrentDB module (and its gRPC
 * native parts) is loaded only when asked for, so PostgreSQL-only installs
 * never load it.
 */
export async function createEventStore(config: Config, pool: Pool): Promise<EventStore> {
  switch (config.eventStore) {
    case 'postgres':
      return new PostgresEventStore(pool);
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
