import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Pool } from 'pg';
import type { EventStore } from '@chronicle/event-store';
import type { Registry } from 'prom-client';
import { type JsonLogger, EVENT_STORE, LOGGER, METRICS_REGISTRY, PG_POOL } from '@chronicle/platform';
import { PROJECTIONS, ProjectionRunner } from '@chronicle/projections';

/**
 * Starts one runner for every projection (one reader of the log) with the app and stops it before the
 * database goes.
 */
@Injectable()
export class ProjectorService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly stop = new AbortController();
  private running: Promise<void> = Promise.resolve();

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(LOGGER) private readonly logger: JsonLogger,
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
  ) {}

  onApplicationBootstrap(): void {
    const logger = this.logger.child('projector');
    this.running = new ProjectionRunner(this.eventStore, this.pool, PROJECTIONS, logger, {
      registry: this.registry,
    }).run(this.stop.signal);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stop.abort();
    await this.running.catch(() => undefined);
  }
}
