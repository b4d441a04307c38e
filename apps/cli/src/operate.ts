import type { Pool } from 'pg';
import { createEventStore, type EventStore, RunServerDirectory } from '@chronicle/event-store';
import { type Config, createPool, loadConfig } from '@chronicle/platform';
import { deploymentProjections, type ServerProjections } from '@chronicle/projections';
import { CliError, EXIT } from './output';

/** The CLI's name in each database's pg_stat_activity. */
const APPLICATION_NAME = 'chronicle-cli';

/** What the operator commands run against: the read models' database and the log the configuration names. */
export interface Operated {
  readonly config: Config;
  readonly pool: Pool;
  readonly store: EventStore;
  /** The servers runs are kept on as the control database's shard map places them, connected on first ask. */
  runServers(): Promise<RunServerDirectory>;
}

/**
 * The read models' pool and the configured store for `work`, closed after it, with the run servers if
 * it asked for them.
 */
export async function operate(work: (operated: Operated) => Promise<void>): Promise<void> {
  const config = loadConfig();
  if (config.databaseUrl === undefined) throw new CliError('DATABASE_URL is not set', EXIT.usage);
  const url = config.databaseUrl;
  const pool = createPool({ connectionString: url, max: 4, applicationName: APPLICATION_NAME });
  try {
    const store = await createEventStore(config, pool);
    let directory: Promise<RunServerDirectory> | undefined;
    const runServers = (): Promise<RunServerDirectory> =>
      (directory ??= RunServerDirectory.open(config, { url, pool, eventStore: store }, APPLICATION_NAME));
    try {
      await work({ config, pool, store, runServers });
    } finally {
      await directory?.then((d) => d.close()).catch(() => undefined);
      await store.close();
    }
  } finally {
    await pool.end();
  }
}

/**
 * Every database's projections with the log each is built from (`deploymentProjections`, as the
 * projector runs them): the control database's alone without a shard map.
 */
export async function projectionsOfDeployment({ pool, store, runServers }: Operated): Promise<ServerProjections[]> {
  return deploymentProjections({ pool, eventStore: store }, (await runServers()).current);
}
