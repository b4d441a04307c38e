import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { Pool } from 'pg';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';

type CheckStatus = { status: 'up' } | { status: 'down'; error: string };

const CHECK_TIMEOUT_MS = 2000;

/** Liveness and readiness in one: 503 when the event store or the read-model database is down. */
@Controller()
export class HealthController {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
  ) {}

  @Get('healthz')
  async health(@Res() response: Response): Promise<void> {
    const [eventStore, readModels] = await Promise.all([
      check(() => this.eventStore.ping()),
      check(() => this.pool.query('SELECT 1 FROM projection_checkpoints LIMIT 0')),
    ]);
    const up = eventStore.status === 'up' && readModels.status === 'up';
    response.status(up ? 200 : 503).json({
      status: up ? 'ok' : 'unavailable',
      checks: { eventStore: { kind: this.eventStore.kind, ...eventStore }, readModels },
    });
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
