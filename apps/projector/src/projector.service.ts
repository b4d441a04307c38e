import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Pool } from 'pg';
import type { EventStore } from '../../../libs/event-store/src/event-store.port';
import type { JsonLogger } from '../../../libs/platform/src/logging/logger';
import { EVENT_STORE, LOGGER, PG_POOL } from '../../../libs/platform/src/runtime/tokens';
import { ProjectionRunner } from './projection-runner';
import { PROJECTIONS } from './projections';

/** Starts a runner per projection with the app and stops them before the database goes. */
@Injectable()
export class ProjectorService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly stop = new AbortController();
  private running: Promise<void>[] = [];

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(LOGGER) private readonly logger: JsonLogger,
  ) {}

  onApplicationBootstrap(): void {
    const logger = this.logger.child('projector');
    this.running = PROJECTIONS.map((projection) => new ProjectionRunner(this.eventStore, this.pool, projection, logger).run(this.stop.signal));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stop.abort();
    await Promise.allSettled(this.running);
  }
}
