import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Pool } from 'pg';
import type { EventStore, RunServerConnection } from '@chronicle/event-store';
import type { Registry } from 'prom-client';
import {
  type JsonLogger,
  EVENT_STORE,
  LOGGER,
  METRICS_REGISTRY,
  PG_POOL,
  RUN_SERVER_CONNECTIONS,
} from '@chronicle/platform';
import { jobsProjection, PROJECTIONS, ProjectionRunner, RUN_PROJECTIONS } from '@chronicle/projections';

/**
 * Starts the runners of the projections (one reader of a log each) with the app and stops them before
 * the databases go. The control database's log feeds every projection of the control database. A server
 * runs are kept on (docs/sharding.md) builds its runs' read models from its own log, and its copy of the
 * `jobs` rows (which its claims join) from the control database's log.
 */
@Injectable()
export class ProjectorService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly stop = new AbortController();
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(RUN_SERVER_CONNECTIONS) private readonly runServers: readonly RunServerConnection[],
    @Inject(LOGGER) private readonly logger: JsonLogger,
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
  ) {}

  onApplicationBootstrap(): void {
    const logger = this.logger.child('projector');
    const options = { registry: this.registry };
    const runners = [new ProjectionRunner(this.eventStore, this.pool, PROJECTIONS, logger, options)];
    for (const server of this.runServers.filter((s) => s.pool !== this.pool)) {
      const serverLogger = this.logger.child(`projector@${server.name}`);
      runners.push(
        new ProjectionRunner(server.eventStore, server.pool, RUN_PROJECTIONS, serverLogger, options),
        new ProjectionRunner(this.eventStore, server.pool, [jobsProjection], serverLogger, options),
      );
    }
    this.running = Promise.all(runners.map((runner) => runner.run(this.stop.signal)));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stop.abort();
    await this.running.catch(() => undefined);
  }
}
