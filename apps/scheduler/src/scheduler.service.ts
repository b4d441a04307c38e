import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Pool } from 'pg';
import type { EventStore } from '../../../libs/event-store/src/event-store.port';
import type { JsonLogger } from '../../../libs/platform/src/logging/logger';
import { EVENT_STORE, LOGGER, PG_POOL } from '../../../libs/platform/src/runtime/tokens';
import { LeaseReaper } from './lease-reaper';

/** Reference 7.4: an expired lease is returned within a second; the reaper looks four times a second. */
const REAP_INTERVAL_MS = 250;

@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(LOGGER) private readonly logger: JsonLogger,
  ) {}

  onApplicationBootstrap(): void {
    const reaper = new LeaseReaper(this.eventStore, this.pool);
    const log = this.logger.child('scheduler');
    const tick = (): void => {
      this.running = reaper
        .reapOnce()
        .then((reaped) => {
          if (reaped > 0) log.info('expired leases reaped', { runs: reaped });
        })
        .catch((err: unknown) => log.error('lease reaper pass failed', { err: String(err) }))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, REAP_INTERVAL_MS);
        });
    };
    tick();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
