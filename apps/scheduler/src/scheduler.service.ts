import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Pool } from 'pg';
import { RunLog, RunMetrics, RunReservations, PAYLOAD_STORE, type PayloadStore } from '@chronicle/commands';
import type { EventStore } from '@chronicle/event-store';
import {
  type JsonLogger,
  type Clock,
  type Config,
  CLOCK,
  CONFIG,
  EVENT_STORE,
  LOGGER,
  PG_POOL,
} from '@chronicle/platform';
import { LeaseReaper } from './reaper/lease-reaper';
import { Materialiser } from './materialiser/materialiser';
import { OverlapResolver } from './overlap/overlap-resolver';
import { HotTablesVacuum } from './vacuum/hot-tables-vacuum';
import { RunRetention } from './retention/run-retention';

/** Reference 7.4: an expired lease is returned within a second; the reaper looks four times a second. */
const REAP_INTERVAL_MS = 250;
/** Reference 3.5: the materialiser looks at every schedule each second, MATERIALISE_LOOKAHEAD_SECONDS (60) ahead. */
const MATERIALISE_INTERVAL_MS = 1000;
/** How often the hot tables' dead rows are looked at (HotTablesVacuum); a vacuum runs beside the passes. */
const VACUUM_CHECK_INTERVAL_MS = 10_000;
/** How often retention looks for days to drop and partitions to create (RunRetention); also at start. */
const RETENTION_INTERVAL_MS = 10 * 60_000;

@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | undefined;
  private vacuumTimer: NodeJS.Timeout | undefined;
  private retentionTimer: NodeJS.Timeout | undefined;
  private retaining: Promise<void> = Promise.resolve();
  private running: Promise<void> = Promise.resolve();
  private vacuuming: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(LOGGER) private readonly logger: JsonLogger,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
    private readonly reservations: RunReservations,
    private readonly runLog: RunLog,
    private readonly metrics: RunMetrics,
    @Inject(PAYLOAD_STORE) private readonly payloads: PayloadStore,
  ) {}

  onApplicationBootstrap(): void {
    const reaper = new LeaseReaper(this.eventStore, this.pool, this.reservations, this.runLog, this.metrics);
    const overlaps = new OverlapResolver(this.eventStore, this.pool, this.reservations, this.runLog);
    const materialiser = new Materialiser(
      this.eventStore,
      this.pool,
      this.clock,
      this.config.materialiseLookaheadSeconds,
      this.payloads,
    );
    const log = this.logger.child('scheduler');
    let lastMaterialised = 0;
    const tick = (): void => {
      const materialise = Date.now() - lastMaterialised >= MATERIALISE_INTERVAL_MS;
      if (materialise) lastMaterialised = Date.now();
      this.running = Promise.all([
        reaper.reapOnce(),
        materialise ? materialiser.materialiseOnce() : Promise.resolve(0),
        overlaps.resolveOnce(),
      ])
        .then(([reaped, scheduled, overlapping]) => {
          if (reaped > 0) log.info('expired leases reaped', { runs: reaped });
          if (overlapping > 0) log.info('overlap policy applied', { runs: overlapping });
          if (scheduled > 0) log.info('scheduled runs materialised', { runs: scheduled });
        })
        .catch((err: unknown) => log.error('scheduler pass failed', { err }))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, REAP_INTERVAL_MS);
        });
    };
    tick();
    const vacuum = new HotTablesVacuum(this.pool, log);
    const vacuumTick = (): void => {
      this.vacuuming = vacuum
        .vacuumOnce()
        .then(() => undefined)
        .catch((err: unknown) => log.error('hot table vacuum failed', { err }))
        .finally(() => {
          if (!this.stopped) this.vacuumTimer = setTimeout(vacuumTick, VACUUM_CHECK_INTERVAL_MS);
        });
    };
    this.vacuumTimer = setTimeout(vacuumTick, VACUUM_CHECK_INTERVAL_MS);
    const retention = new RunRetention(this.pool, this.eventStore, this.config.retentionDays, () => this.clock.now());
    const retentionTick = (): void => {
      this.retaining = retention
        .retainOnce()
        .then((report) => {
          const changed =
            report !== undefined &&
            (report.droppedDays.length > 0 || report.createdDays.length > 0 || report.log.expiredStreams > 0);
          if (changed) log.info('run retention applied', { ...report });
        })
        .catch((err: unknown) => log.error('run retention failed', { err }))
        .finally(() => {
          if (!this.stopped) this.retentionTimer = setTimeout(retentionTick, RETENTION_INTERVAL_MS);
        });
    };
    retentionTick();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.vacuumTimer);
    clearTimeout(this.retentionTimer);
    await Promise.all([this.running, this.vacuuming, this.retaining]);
  }
}
