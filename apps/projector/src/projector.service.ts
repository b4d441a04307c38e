import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Pool } from 'pg';
import type { EventStore, RunServerConnection, RunServerDirectory } from '@chronicle/event-store';
import type { Registry } from 'prom-client';
import {
  type JsonLogger,
  EVENT_STORE,
  LOGGER,
  METRICS_REGISTRY,
  PG_POOL,
  RUN_SERVER_DIRECTORY,
} from '@chronicle/platform';
import {
  controlProjections,
  type ProjectedDatabase,
  ProjectionRunner,
  runServerProjections,
} from '@chronicle/projections';

/**
 * Starts the runners of the projections (one reader of a log each) with the app and stops them before
 * the databases go. The control database's log feeds every projection of the control database. A server
 * runs are kept on (docs/sharding.md) builds its runs' read models from its own log, and its copy of the
 * `jobs` rows (which its claims join) from the control database's log: one runner for each of
 * `controlProjections` and `runServerProjections`, the list the CLI's `projections` commands and the lag
 * gauge go over too.
 */
@Injectable()
export class ProjectorService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly stop = new AbortController();
  private running: Promise<unknown> = Promise.resolve();
  /** The runners of each server but the control database, by its pool, each with how to stop them. */
  private readonly servers = new Map<Pool, { stop: AbortController; running: Promise<unknown> }>();
  private unfollow: () => void = () => undefined;

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(RUN_SERVER_DIRECTORY) private readonly directory: RunServerDirectory,
    @Inject(LOGGER) private readonly logger: JsonLogger,
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
  ) {}

  onApplicationBootstrap(): void {
    const { store, pool, projections } = controlProjections(this.control);
    this.running = new ProjectionRunner(store, pool, projections, this.logger.child('projector'), {
      registry: this.registry,
    }).run(this.stop.signal);
    this.follow(this.directory.current);
    // A failover or a move: the runners of the servers the map names now.
    this.unfollow = this.directory.onChange((connections) => this.follow(connections));
  }

  /** Starts the runners of the servers new to the map, stops those of the servers it no longer names. */
  private follow(connections: readonly RunServerConnection[]): void {
    const named = new Set(connections.map((c) => c.pool));
    for (const [pool, runners] of this.servers)
      if (!named.has(pool)) {
        runners.stop.abort();
        this.servers.delete(pool);
      }
    for (const server of connections) {
      if (server.pool === this.pool || this.servers.has(server.pool)) continue;
      const stop = new AbortController();
      const signal = AbortSignal.any([stop.signal, this.stop.signal]);
      const logger = this.logger.child(`projector@${server.name}`);
      const options = { registry: this.registry };
      const running = Promise.all(
        runServerProjections(this.control, server).map(({ store, pool, projections }) =>
          new ProjectionRunner(store, pool, projections, logger, options).run(signal),
        ),
      );
      this.servers.set(server.pool, { stop, running });
    }
  }

  private get control(): ProjectedDatabase {
    return { pool: this.pool, eventStore: this.eventStore };
  }

  async onApplicationShutdown(): Promise<void> {
    this.unfollow();
    this.stop.abort();
    await Promise.all(
      [this.running, ...[...this.servers.values()].map((r) => r.running)].map((p) => p.catch(() => undefined)),
    );
  }
}
