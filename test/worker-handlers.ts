import type { Pool } from 'pg';
import { Registry } from 'prom-client';
import {
  CompleteRunsHandler,
  LeaseRunsHandler,
  PostgresPayloadStore,
  ReadySignal,
  RunClaims,
  RunLog,
  RunMetrics,
  RunReservations,
  TeamsServed,
} from '@chronicle/commands';
import type { EventStore } from '@chronicle/event-store';
import { createLogger, loadConfig } from '@chronicle/platform';
import { runDecisions, runServers } from './run-decisions';

/**
 * The worker protocol's command handlers as Nest wires them, on a store and read models of a
 * test's choosing (one log of its own, for instance), sharing one reservation registry (and one
 * metrics registry of their own).
 */
export function workerHandlers(
  store: EventStore,
  pool: Pool,
  reservations: RunReservations = new RunReservations(createLogger('error')),
): { lease: LeaseRunsHandler; complete: CompleteRunsHandler } {
  const [config, ready, teamsServed] = [loadConfig({}), new ReadySignal(), new TeamsServed(pool)];
  const runLog = new RunLog(createLogger('error'));
  const metrics = new RunMetrics(new Registry());
  const payloads = new PostgresPayloadStore(pool);
  const servers = runServers(store, pool, runDecisions(store, pool, reservations));
  const claims = new RunClaims(config, teamsServed, servers, metrics, payloads, ready);
  return {
    lease: new LeaseRunsHandler(ready, claims, servers),
    complete: new CompleteRunsHandler(config, ready, teamsServed, servers, runLog, metrics, payloads, claims),
  };
}

/** The commands those handlers execute, for tests outside the commands' layer (the projector's). */
export { CompleteRuns, LeaseRuns, successesOf } from '@chronicle/commands';
