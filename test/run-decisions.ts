import type { Pool } from 'pg';
import { RunDecisions, RunLog, RunReservations } from '@chronicle/commands';
import type { EventStore } from '@chronicle/event-store';
import { createLogger } from '@chronicle/platform';

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
