import type { Pool } from 'pg';
import { createEventStore, type ControlDatabase, type EventStore, RunServerDirectory } from '@chronicle/event-store';
import {
  systemClock,
  type Clock,
  type Config,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
  migrate,
  createPool,
  type JsonLogger,
  placeShards,
} from '@chronicle/platform';
import { resolveAdminTokenHash } from './admin-token';
import { StartupError, describeConnectionError } from './startup-error';

/** What every process needs before Nest starts: the database, migrated, and the event store. */
export interface Runtime {
  readonly config: Config;
  readonly logger: JsonLogger;
  readonly clock: Clock;
  readonly pool: Pool;
  readonly eventStore: EventStore;
  /** The servers runs are kept on (docs/sharding.md): the control database alone without a shard map. */
  readonly runServers: RunServerDirectory;
  /** SHA-256 of the admin token; undefined when admin calls are refused. */
  readonly adminTokenHash: string | undefined;
  /** Stops in reverse order of start; the embedded server last. */
  close(): Promise<void>;
}

export async function startRuntime(config: Config, logger: JsonLogger, applicationName: string): Promise<Runtime> {
  let embedded: EmbeddedPostgres | undefined;
  let databaseUrl = config.databaseUrl;
  if (databaseUrl === undefined) {
    logger.info('DATABASE_URL unset: starting embedded PostgreSQL', { dataDir: config.dataDir });
    const pgLog = logger.child('embedded-postgres');
    embedded = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      port: config.embeddedPgPort,
      onLog: (line) => pgLog.debug(line),
    });
    databaseUrl = embedded.connectionString;
  }
  try {
    const applied = await migrate(databaseUrl).catch((err: unknown) => {
      throw new StartupError(describeConnectionError(err, databaseUrl ?? ''));
    });
    if (applied.length > 0) logger.info('migrations applied', { versions: applied });
    const pool = createPool({ connectionString: databaseUrl, max: config.pgPoolSize, applicationName });
    const eventStore = await createEventStore(config, pool).catch((err: unknown) => {
      throw new StartupError(
        describeConnectionError(err, config.eventStoreUrl ?? databaseUrl ?? '', 'EVENT_STORE_URL'),
      );
    });
    await eventStore.ping().catch((err: unknown) => {
      throw new StartupError(`event store ${config.eventStore} is not reachable: ${(err as Error).message}`);
    });
    const runServers = await openRunServers(config, { url: databaseUrl, pool, eventStore }, applicationName).catch(
      (err: unknown) => {
        throw new StartupError(`the servers runs are kept on (RUN_SHARD_URLS): ${(err as Error).message}`);
      },
    );
    if (runServers.current.length > 1 || runServers.current[0]?.name !== 'control')
      logger.info('runs kept on several servers', { servers: runServers.current.map((s) => s.name) });
    const mapLog = logger.child('shard-map');
    runServers.follow((err) => mapLog.warn('reading the shard map failed; trying again', { err }));
    const adminTokenHash = await resolveAdminTokenHash(config, logger);
    return {
      config,
      logger,
      clock: systemClock,
      pool,
      eventStore,
      runServers,
      adminTokenHash,
      close: async () => {
        await runServers.close();
        await eventStore.close().catch((err: unknown) => logger.warn('closing the event store failed', { err }));
        await pool.end().catch(() => undefined);
        await embedded?.stop();
      },
    };
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
}

/**
 * The shard map of the control database, placed at the first start that names servers (RUN_SHARD_URLS),
 * and a connection to each of its servers, migrated. No map: the control database alone.
 */
export async function openRunServers(
  config: Config,
  control: ControlDatabase,
  applicationName: string,
): Promise<RunServerDirectory> {
  await placeShards(control.pool, config.runShardUrls, config.shards, config.runShardStandbyUrls);
  return RunServerDirectory.open(config, control, applicationName);
}
