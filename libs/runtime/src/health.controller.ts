import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { Pool } from 'pg';
import { Gauge, type Registry } from 'prom-client';
import type { EventStore, RunServerDirectory } from '@chronicle/event-store';
import {
  CANARY_DEGRADED_AFTER,
  CONFIG,
  EVENT_STORE,
  METRICS_REGISTRY,
  PG_POOL,
  RUN_SERVER_DIRECTORY,
  type Config,
} from '@chronicle/platform';

type CheckStatus = { status: 'up' } | { status: 'down'; error: string };
/** Degraded, not down: a shard missed its canary twice in a row (docs/operations.md, "Canaries"). */
type CanaryStatus =
  { status: 'up' | 'off' } | { status: 'degraded'; shards: number[] } | { status: 'unknown'; error: string };

const CHECK_TIMEOUT_MS = 2000;

/** A server runs are kept on, other than the control database (docs/sharding.md), and whether it answers. */
type RunServerCheck = { readonly server: string; readonly shards: readonly number[] } & CheckStatus;

/**
 * Liveness and readiness in one: 503 when the event store or the read-model (control) database is
 * down; 200 with status `degraded` while a shard's canary has missed twice in a row or more, or a
 * server runs are kept on does not answer (its shards' runs wait; the others go on). The servers'
 * answers are also the gauge chronicle_run_server_up{server}.
 */
@Controller()
export class HealthController {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(RUN_SERVER_DIRECTORY) private readonly directory: RunServerDirectory,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    const servers = (): Promise<RunServerCheck[]> => this.runServers();
    // Served by every process (no series without other servers), so that the alert's metric always exists.
    if (registry.getSingleMetric('chronicle_run_server_up') === undefined)
      new Gauge({
        name: 'chronicle_run_server_up',
        help: 'Whether a server runs are kept on answers (1) or not (0), asked at each scrape',
        labelNames: ['server'],
        registers: [registry],
        async collect() {
          for (const check of await servers()) this.set({ server: check.server }, check.status === 'up' ? 1 : 0);
        },
      });
  }

  @Get('healthz')
  async health(@Res() response: Response): Promise<void> {
    const [eventStore, readModels, canaries, runServers] = await Promise.all([
      check(() => this.eventStore.ping()),
      check(() => this.pool.query('SELECT 1 FROM projection_checkpoints LIMIT 0')),
      this.canaries(),
      this.runServers(),
    ]);
    const up = eventStore.status === 'up' && readModels.status === 'up';
    const degraded = canaries.status === 'degraded' || runServers.some((s) => s.status === 'down');
    response.status(up ? 200 : 503).json({
      status: !up ? 'unavailable' : degraded ? 'degraded' : 'ok',
      checks: {
        eventStore: { kind: this.eventStore.kind, ...eventStore },
        readModels,
        canaries,
        ...(runServers.length === 0 ? {} : { runServers }),
      },
    });
  }

  /** Each server runs are kept on but the control database, as the shard map places them now, asked at once. */
  private runServers(): Promise<RunServerCheck[]> {
    return Promise.all(
      this.directory.current
        .filter((server) => server.pool !== this.pool)
        .map(async (server) => ({
          server: server.name,
          shards: server.shards,
          ...(await check(() => server.pool.query('SELECT 1'))),
        })),
    );
  }

  private async canaries(): Promise<CanaryStatus> {
    if (!this.config.canaries) return { status: 'off' };
    let shards: number[] = [];
    const probe = await check(async () => {
      const { rows } = await this.pool.query<{ shard: number }>(
        'SELECT shard FROM canary_status WHERE shard < $1 AND consecutive_missed >= $2 ORDER BY shard',
        [this.config.shards, CANARY_DEGRADED_AFTER],
      );
      shards = rows.map((r) => r.shard);
    });
    if (probe.status === 'down') return { status: 'unknown', error: probe.error };
    return shards.length > 0 ? { status: 'degraded', shards } : { status: 'up' };
  }
}

async function check(probe: () => Promise<unknown>): Promise<CheckStatus> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([probe(), timeout]);
    return { status: 'up' };
  } catch (err) {
    return { status: 'down', error: err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}
