import type { Pool } from 'pg';
import { type Config, ConfigError, createPool, migrate, type ShardMap } from '@chronicle/platform';
import type { EventStore } from './event-store.port';
import { PostgresEventStore } from './postgres/postgres.event-store';

/**
 * A server runs are kept on (docs/sharding.md): its read models and its log. With the PostgreSQL log a
 * server's log is its own `events`, in the same database as its rows, so that a run's append and its
 * rows are one transaction there, as in a single database.
 */
export interface RunServerConnection {
  /** Its name in the shard map; `control` for the control database when there is no map. */
  readonly name: string;
  /** The logical shards whose runs it keeps. */
  readonly shards: readonly number[];
  readonly pool: Pool;
  readonly eventStore: EventStore;
  /** Ends its pool and log; nothing for the control database's, which the runtime closes. */
  close(): Promise<void>;
}

/**
 * The connections to the map's servers, each migrated; a server whose URL is the control database's
 * shares its pool and log. No map: the control database alone.
 */
export async function connectRunServers(
  config: Config,
  control: { readonly url: string; readonly pool: Pool; readonly eventStore: EventStore },
  map: ShardMap | null,
  applicationName: string,
): Promise<RunServerConnection[]> {
  const controlServer = (name: string, shards: readonly number[]): RunServerConnection => ({
    name,
    shards,
    pool: control.pool,
    eventStore: control.eventStore,
    close: async () => undefined,
  });
  if (map === null)
    return [
      controlServer(
        'control',
        Array.from({ length: config.shards }, (_, shard) => shard),
      ),
    ];
  if (config.eventStore !== 'postgres')
    throw new ConfigError(
      "runs on several servers (RUN_SHARD_URLS) keep each server's runs in its own PostgreSQL log for now: use EVENT_STORE=postgres (docs/sharding.md)",
    );
  const connections: RunServerConnection[] = [];
  try {
    for (const [i, { name, url }] of map.servers.entries()) {
      const shards = map.placement.flatMap((server, shard) => (server === i ? [shard] : []));
      if (url === control.url) {
        connections.push(controlServer(name, shards));
        continue;
      }
      await migrate(url);
      const pool = createPool({ connectionString: url, max: config.pgPoolSize, applicationName });
      connections.push({ name, shards, pool, eventStore: new PostgresEventStore(pool), close: () => pool.end() });
    }
    return connections;
  } catch (err) {
    await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
    throw err;
  }
}
