import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { Pool } from 'pg';
import type { EventStore } from '@chronicle/event-store';
import { CANARY_DEGRADED_AFTER, CONFIG, EVENT_STORE, PG_POOL, type Config } from '@chronicle/platform';

type CheckStatus = { status: 'up' } | { status: 'down'; error: string };
/** Degraded, not down: a shard missed its canary twice in a row (docs/operations.md, "Canaries"). */
type CanaryStatus =
  { status: 'up' | 'off' } | { status: 'degraded'; shards: number[] } | { status: 'unknown'; error: string };

const CHECK_TIMEOUT_MS = 2000;

/**
 * Liveness and readiness in one: 503 when the event store or the read-model database is down; 200
 * with status `degraded` while a shard's canary has missed twice in a row or more.
 */
@Controller()
export class HealthController {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Get('healthz')
  async health(@Res() response: Response): Promise<void> {
    const [eventStore, readModels, canaries] = await Promise.all([
      check(() => this.eventStore.ping()),
      check(() => this.pool.query('SELECT 1 FROM projection_checkpoints LIMIT 0')),
      this.canaries(),
    ]);
    const up = eventStore.status === 'up' && readModels.status === 'up';
    response.status(up ? 200 : 503).json({
      status: !up ? 'unavailable' : canaries.status === 'degraded' ? 'degraded' : 'ok',
      checks: { eventStore: { kind: this.eventStore.kind, ...eventStore }, readModels, canaries },
    });
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
