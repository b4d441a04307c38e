import type { Pool } from 'pg';
import { CONTROL_SERVER, type EventStore } from '@chronicle/event-store';
import { auditProjection } from './audit/audit.projection';
import { jobsProjection } from './jobs/jobs.projection';
import { runActivityProjection } from './run-activity/run-activity.projection';
import { runsProjection } from './runs/runs.projection';
import { streamActivityProjection } from './stream-activity/stream-activity.projection';
import type { Projection } from './projection';

/**
 * Every projection the projector runs, applied in this order to each batch: run-activity and audit
 * after runs and jobs, whose rows they read.
 */
export const PROJECTIONS: readonly Projection[] = [
  streamActivityProjection,
  jobsProjection,
  runsProjection,
  runActivityProjection,
  auditProjection,
];

/** The projections of runs' events alone: what a server runs are kept on builds from its own log. */
export const RUN_PROJECTIONS: readonly Projection[] = [runsProjection, runActivityProjection];

/** A database and a log: the control database, or a server runs are kept on (RunServerConnection). */
export interface ProjectedDatabase {
  readonly pool: Pool;
  readonly eventStore: EventStore;
}

/**
 * Projections kept in one database and built from one log, with their checkpoints in that database:
 * what one ProjectionRunner runs, and what `chronicle projections` and the lag gauge look at.
 */
export interface ServerProjections {
  /** The database's server: CONTROL_SERVER, or its name in the shard map. */
  readonly server: string;
  readonly pool: Pool;
  /** The log's server, as `server` is named. */
  readonly log: string;
  readonly store: EventStore;
  readonly projections: readonly Projection[];
}

/** The control database's projections: every one, from its own log. */
export function controlProjections(control: ProjectedDatabase): ServerProjections {
  return {
    server: CONTROL_SERVER,
    pool: control.pool,
    log: CONTROL_SERVER,
    store: control.eventStore,
    projections: PROJECTIONS,
  };
}

/**
 * A run server's projections (docs/sharding.md, "What lives where"): its runs' read models from its
 * own log, and its copy of the `jobs` rows, which its claims join, from the control database's log.
 * None for a server that is the control database (the map may place shards there): those are
 * controlProjections.
 */
export function runServerProjections(
  control: ProjectedDatabase,
  server: ProjectedDatabase & { readonly name: string },
): ServerProjections[] {
  if (server.pool === control.pool) return [];
  const { name, pool } = server;
  return [
    { server: name, pool, log: name, store: server.eventStore, projections: RUN_PROJECTIONS },
    { server: name, pool, log: CONTROL_SERVER, store: control.eventStore, projections: [jobsProjection] },
  ];
}

/** Every database's projections in the deployment: the control database's, then each server's in the map's order. */
export function deploymentProjections(
  control: ProjectedDatabase,
  servers: ReadonlyArray<ProjectedDatabase & { readonly name: string }>,
): ServerProjections[] {
  return [controlProjections(control), ...servers.flatMap((server) => runServerProjections(control, server))];
}
