import type { INestApplication } from '@nestjs/common';
import { ApiModule } from '../../apps/api/src/api.module';
import { setupOpenApi } from '../../apps/api/src/openapi';
import type { Pool } from 'pg';
import type { EventStore } from '../../libs/event-store/src/event-store.port';
import { systemClock, type Clock } from '../../libs/platform/src/clock/clock';
import { loadConfig } from '../../libs/platform/src/config/config';
import { JsonLogger } from '../../libs/platform/src/logging/logger';
import { hashToken } from '../../libs/platform/src/runtime/admin-token';
import { createApp, type ProcessDefinition } from '../../libs/platform/src/runtime/run-process';

export interface RunningApp {
  readonly url: string;
  readonly app: INestApplication;
  close(): Promise<void>;
}

/** The real Nest application, listening on a free port, on the given database and event store (and clock: the system's unless given). */
export async function startApp(pool: Pool, eventStore: EventStore, modules: ProcessDefinition['modules'], adminToken?: string, clock: Clock = systemClock): Promise<RunningApp> {
  const logger = new JsonLogger('error');
  const runtime = { config: loadConfig({}), logger, clock, pool, eventStore, adminTokenHash: adminToken === undefined ? undefined : hashToken(adminToken), close: async () => undefined };
  const app = await createApp(runtime, modules, logger);
  if (modules.includes(ApiModule)) setupOpenApi(app);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, app, close: () => app.close() };
}
