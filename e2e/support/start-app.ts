import type { INestApplication } from '@nestjs/common';
import { ApiModule, configureApi } from '@chronicle/api';
import type { Pool } from 'pg';
import { type EventStore, RunServerDirectory } from '@chronicle/event-store';
import { systemClock, type Clock, loadConfig, createLogger, hashToken, type JsonLogger } from '@chronicle/platform';
import { createApp, openRunServers, type RoleModules } from '@chronicle/runtime';

export interface RunningApp {
  readonly url: string;
  readonly app: INestApplication;
  close(): Promise<void>;
}

/**
 * The real Nest application, listening on a free port, on the given database and event store (and
 * clock: the system's unless given; configuration: the defaults, and `env`'s variables; logs: errors only,
 * on stdout, unless a logger is given).
 */
export async function startApp(
  pool: Pool,
  eventStore: EventStore,
  modules: RoleModules,
  adminToken?: string,
  clock: Clock = systemClock,
  env: Readonly<Record<string, string>> = {},
  logger: JsonLogger = createLogger('error'),
): Promise<RunningApp> {
  const config = loadConfig(env);
  // With RUN_SHARD_URLS in `env`, the runs' servers of the shard map (placed in `pool`'s database at the first
  // start); without, the database alone, not asked (a test may give one that is down).
  const control = { url: '', pool, eventStore };
  const runServers =
    config.runShardUrls.length === 0
      ? RunServerDirectory.fixed(config, [
          {
            name: 'control',
            url: '',
            shards: [...Array(config.shards).keys()],
            arriving: [],
            pool,
            eventStore,
            close: async () => undefined,
          },
        ])
      : await openRunServers(config, control, 'scheduler-e2e');
  runServers.follow(() => undefined);
  const runtime = {
    config,
    logger,
    clock,
    pool,
    eventStore,
    runServers,
    adminTokenHash: adminToken === undefined ? undefined : hashToken(adminToken),
    close: async () => undefined,
  };
  const app = await createApp(runtime, modules, logger);
  if (modules.includes(ApiModule)) configureApi(app);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    app,
    close: async () => {
      await app.close();
      await runServers.close();
    },
  };
}
