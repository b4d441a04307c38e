import { Inject, Injectable } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { Gauge, type Registry } from 'prom-client';
import type { EventStore, RunServerDirectory } from '@chronicle/event-store';
import {
  EVENT_STORE,
  LOGGER,
  METRICS_REGISTRY,
  PG_POOL,
  RUN_SERVER_DIRECTORY,
  type JsonLogger,
} from '@chronicle/platform';
import { deploymentProjections, loadCheckpoint, type ServerProjections } from '@chronicle/projections';
import { GetQueueStats, type QueueStats } from '../listings/queue-stats.query';

/** A projection further behind than this reads as this: counting the log is bounded, however far behind. */
export const PROJECTION_LAG_LIMIT = 100_000;

/** A rate limit's row of rate_limit_state. */
interface RateLimitState {
  readonly rate_limit: string;
  readonly tokens: number | null;
  readonly throttled: number;
}

/** How far one server's projection is behind the log it is built from. */
interface ProjectionLag {
  readonly projection: string;
  readonly server: string;
  readonly events: number;
}

/**
 * The gauges of the read models, computed as Prometheus scrapes (prom-client's `collect`) from SQL, so
 * that every API replica answers the same: the ready runs and the age of the oldest per queue and
 * priority, the DLQ per queue (the overview's GetQueueStats, of every team, which counts the runs on
 * every server they are kept on and adds them up), and each projection's distance from its log's head
 * on every database that keeps it (`deploymentProjections`, as the projector runs them: a run server's
 * runs' read models behind its own log, its jobs copy behind the control database's). The queue gauges
 * share one query per scrape. A read that fails leaves its gauges out of that scrape (logged; for the
 * lag, that server's series alone), and the process's other metrics are still served.
 */
@Injectable()
export class ReadModelGauges {
  private inFlight: Promise<QueueStats[] | undefined> | undefined;

  constructor(
    @Inject(METRICS_REGISTRY) registry: Registry,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(RUN_SERVER_DIRECTORY) private readonly directory: RunServerDirectory,
    @Inject(LOGGER) private readonly logger: JsonLogger,
    private readonly queries: QueryBus,
  ) {
    const registers = [registry];
    const queueStats = (): Promise<QueueStats[] | undefined> => this.queueStats();
    const projectionLag = (): Promise<ProjectionLag[]> => this.projectionLag();
    new Gauge({
      name: 'chronicle_ready_runs',
      help: 'Runs ready to lease now, per queue and priority',
      labelNames: ['queue', 'priority'],
      registers,
      async collect() {
        const stats = await queueStats();
        this.reset();
        for (const s of stats ?? []) this.set({ queue: s.queue, priority: s.priority }, s.ready);
      },
    });
    new Gauge({
      name: 'chronicle_oldest_ready_age_seconds',
      help: 'Since the oldest ready run of the queue and priority became ready; 0 when none is',
      labelNames: ['queue', 'priority'],
      registers,
      async collect() {
        const stats = await queueStats();
        this.reset();
        for (const s of stats ?? []) this.set({ queue: s.queue, priority: s.priority }, s.oldestReadyAgeSeconds ?? 0);
      },
    });
    new Gauge({
      name: 'chronicle_dlq_runs',
      help: 'Dead runs not discarded (the dead-letter queue), per queue',
      labelNames: ['queue'],
      registers,
      async collect() {
        const stats = await queueStats();
        this.reset();
        const dead = new Map<string, number>();
        for (const s of stats ?? []) dead.set(s.queue, (dead.get(s.queue) ?? 0) + s.dead);
        for (const [queue, runs] of dead) this.set({ queue }, runs);
      },
    });
    const rateLimits = (): Promise<RateLimitState[]> => this.rateLimits();
    new Gauge({
      name: 'chronicle_rate_limited_runs',
      help: 'Runs due and held back because the rate limit has no whole token now (job:, key:, queue:), at most 10,000',
      labelNames: ['limit'],
      registers,
      async collect() {
        const limits = await rateLimits();
        this.reset();
        for (const { rate_limit, throttled } of limits) this.set({ limit: rate_limit }, throttled);
      },
    });
    new Gauge({
      name: 'chronicle_rate_limit_tokens',
      help: "A job's or a queue's rate limit: the tokens its bucket holds now",
      labelNames: ['limit'],
      registers,
      async collect() {
        const limits = await rateLimits();
        this.reset();
        for (const { rate_limit, tokens } of limits) if (tokens !== null) this.set({ limit: rate_limit }, tokens);
      },
    });
    new Gauge({
      name: 'chronicle_projection_lag_events',
      help: `Events in the log after the projection's checkpoint on the server (at most ${PROJECTION_LAG_LIMIT})`,
      labelNames: ['projection', 'server'],
      registers,
      async collect() {
        const lags = await projectionLag();
        this.reset();
        for (const { projection, server, events } of lags) this.set({ projection, server }, events);
      },
    });
  }

  /** Every team's queue stats, one query shared by the gauges that ask during one scrape. */
  private queueStats(): Promise<QueueStats[] | undefined> {
    this.inFlight ??= this.queries
      .execute(new GetQueueStats({ kind: 'admin' }))
      .catch((err: unknown) => this.failed('queue stats', err))
      .finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  /**
   * Each rate limit's tokens and held-back runs (rate_limit_state, migrations/0044), on every server that
   * keeps runs, added up by limit; a server that fails is left out (logged).
   */
  private rateLimitsInFlight: Promise<RateLimitState[]> | undefined;
  private rateLimits(): Promise<RateLimitState[]> {
    this.rateLimitsInFlight ??= (async () => {
      const pools = [this.pool, ...this.directory.current.filter((s) => s.pool !== this.pool).map((s) => s.pool)];
      const answers = await Promise.all(
        pools.map((pool) =>
          pool
            .query<RateLimitState>('SELECT rate_limit, tokens, throttled FROM rate_limit_state()')
            .then((r) => r.rows)
            .catch((err: unknown) => this.failed('rate limits', err) ?? []),
        ),
      );
      const added = new Map<string, RateLimitState>();
      for (const row of answers.flat()) {
        const seen = added.get(row.rate_limit);
        added.set(row.rate_limit, seen === undefined ? row : { ...seen, throttled: seen.throttled + row.throttled });
      }
      return [...added.values()];
    })().finally(() => (this.rateLimitsInFlight = undefined));
    return this.rateLimitsInFlight;
  }

  /** Every database's projections, asked at once; a database that fails is left out (logged). */
  private async projectionLag(): Promise<ProjectionLag[]> {
    const deployment = deploymentProjections({ pool: this.pool, eventStore: this.eventStore }, this.directory.current);
    const lags = await Promise.all(
      deployment.map((database) =>
        lagsOf(database).catch((err: unknown) => this.failed(`projection lag on ${database.server}`, err) ?? []),
      ),
    );
    return lags.flat();
  }

  private failed(what: string, err: unknown): undefined {
    this.logger.warn(`metrics: reading ${what} failed; its gauges are left out of this scrape`, {
      err: String(err),
    });
    return undefined;
  }
}

/** How far each of a database's projections is behind its log (a projection without a checkpoint: none yet). */
async function lagsOf({ server, pool, store, projections }: ServerProjections): Promise<ProjectionLag[]> {
  const lags = await Promise.all(
    projections.map(async ({ name }): Promise<ProjectionLag | undefined> => {
      const checkpoint = await loadCheckpoint(pool, name);
      // A projection the projector has not started yet has no checkpoint: no series.
      if (checkpoint === undefined) return undefined;
      const events = await store.countEventsAfter(checkpoint.position, PROJECTION_LAG_LIMIT);
      return { projection: name, server, events };
    }),
  );
  return lags.filter((lag) => lag !== undefined);
}
