import type { Pool } from 'pg';
import { RunDecisions, RunLog, RunReservations, RunServers } from '@chronicle/commands';
import { type EventStore, RunServerDirectory } from '@chronicle/event-store';
import { createLogger, loadConfig } from '@chronicle/platform';

/**
 * A RunDecisions over this store and read models, as the process's module makes one (its lines at error
 * level only), with a reservation registry of its own or the one given (to share it with other handlers).
 */
export function runDecisions(
  store: EventStore,
  pool: Pool,
  reservations: RunReservations = new RunReservations(createLogger('error')),
): RunDecisions {
  return new RunDecisions(store, pool, reservations, new RunLog(createLogger('error')));
}

/** The runs' servers of a single-database deployment (the control database alone), over `decisions`. */
export function runServers(
  store: EventStore,
  pool: Pool,
  decisions: RunDecisions = runDecisions(store, pool),
): RunServers {
  const config = loadConfig({});
  const control = {
    name: 'control',
    url: '',
    shards: Array.from({ length: config.shards }, (_, shard) => shard),
    arriving: [],
    pool,
    eventStore: store,
    close: async () => undefined,
  };
  const logger = createLogger('error');
  return new RunServers(
    RunServerDirectory.fixed(config, [control]),
    config,
    pool,
    store,
    decisions,
    new RunLog(logger),
    logger,
  );
}
