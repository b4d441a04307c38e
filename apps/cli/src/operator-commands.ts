import type { Pool } from 'pg';
import { Command } from 'commander';
import { moveShard } from '@chronicle/commands';
import { createEventStore, type EventStore, RunServerDirectory } from '@chronicle/event-store';
import { createLogger, createPool, loadConfig, migrate, promoteStandby } from '@chronicle/platform';
import {
  PROJECTIONS,
  loadCheckpoint,
  eventsInLog,
  rebuildProjection,
  verifyProjections,
  type RebuildProgress,
} from '@chronicle/projections';
import { CliError, EXIT, nonNegativeInteger, positiveInteger, type Output } from './output';

/** What the operator commands run against: the read models' database and the log the configuration names. */
interface Operated {
  readonly pool: Pool;
  readonly store: EventStore;
}

/**
 * The operator's commands, against the database itself (DATABASE_URL, and
 * the event store settings the server reads): projections status, rebuild
 * and verify, and migrate.
 */
export function operatorCommands(output: Output): Command[] {
  const projections = new Command('projections').description(
    "the read models built from the log: each one's checkpoint, rebuilds, checks",
  );

  projections
    .command('status')
    .description("each projection's version and checkpoint")
    .action(() =>
      operate(async ({ pool }) => {
        const rows = await Promise.all(
          PROJECTIONS.map(async (projection) => {
            const checkpoint = await loadCheckpoint(pool, projection.name);
            return {
              projection: projection.name,
              version: projection.version,
              storedVersion: checkpoint?.version ?? null,
              commitPosition: checkpoint?.position.commit.toString() ?? null,
              preparePosition: checkpoint?.position.prepare.toString() ?? null,
              tables: projection.tables.join(', '),
            };
          }),
        );
        output.table(rows);
      }),
    );

  projections
    .command('rebuild')
    .argument('<name>', `one of ${PROJECTIONS.map((p) => p.name).join(', ')}`)
    .description('build the projection afresh from the log beside the live tables, then swap it in; nothing stops')
    .option('--batch-size <events>', 'events per read of the log (default 20000)', positiveInteger)
    .action((name: string, options: { batchSize: number }) =>
      operate(async ({ pool, store }) => {
        const projection = PROJECTIONS.find((p) => p.name === name);
        if (projection === undefined)
          throw new CliError(`no projection ${name}: ${PROJECTIONS.map((p) => p.name).join(', ')}`, EXIT.usage);
        const progress = output.progress(`rebuilding ${name}`, await eventsInLog(store));
        const report = await rebuildProjection(store, pool, projection, {
          batchSize: options.batchSize,
          onProgress: (p: RebuildProgress) => progress.update(p.events, p.phase),
        });
        progress.stop();
        output.result(
          { projection: name, events: report.events, seconds: report.seconds, eventsPerSecond: rate(report) },
          `rebuilt ${name}: ${report.events} events in ${report.seconds.toFixed(1)} s (${rate(report)} events/s), swapped in`,
        );
      }),
    );

  projections
    .command('verify')
    .description('rebuild every projection into a scratch schema and compare it with the live tables, row by row')
    .option('--batch-size <events>', 'events per read of the log (default 20000)', positiveInteger)
    .action((options: { batchSize: number }) =>
      operate(async ({ pool, store }) => {
        const progress = output.progress('verifying', await eventsInLog(store));
        const report = await verifyProjections(store, pool, PROJECTIONS, {
          batchSize: options.batchSize,
          onProgress: (p: RebuildProgress) => progress.update(p.events, p.phase),
        });
        progress.stop();
        const summary = `verified ${PROJECTIONS.length} projections over ${report.events} events in ${report.seconds.toFixed(1)} s (${rate(report)} events/s): ${report.differences.length} differences`;
        output.result({ events: report.events, seconds: report.seconds, differences: report.differences }, summary);
        if (report.differences.length > 0) {
          output.table(report.differences.map((d) => ({ table: d.table, kind: d.kind, key: d.key })));
          throw new CliError(`${report.differences.length} rows differ from the log`, EXIT.failed);
        }
      }),
    );

  const migrateCommand = new Command('migrate')
    .description('apply the migrations not yet applied (the server does this as it starts)')
    .action(async () => {
      const config = loadConfig();
      if (config.databaseUrl === undefined) throw new CliError('DATABASE_URL is not set', EXIT.usage);
      const applied = await migrate(config.databaseUrl);
      if (config.eventStoreUrl !== undefined) applied.push(...(await migrate(config.eventStoreUrl)));
      output.result({ applied }, applied.length === 0 ? 'nothing to migrate' : `applied ${applied.join(', ')}`);
    });

  const shards = new Command('shards').description(
    'where the shards keep their runs (RUN_SHARD_URLS, docs/sharding.md): the map, and failover to a standby',
  );

  shards
    .command('map')
    .description("each shard's server and epoch; empty: every run in the control database")
    .action(() =>
      operate(async ({ pool }) => {
        const { rows } = await pool.query<{ shard: number; server: string; epoch: string; placed_at: Date }>(
          'SELECT shard, server, epoch, placed_at FROM shard_map ORDER BY shard',
        );
        output.table(
          rows.map((r) => ({
            shard: r.shard,
            server: r.server,
            epoch: Number(r.epoch),
            placedAt: r.placed_at.toISOString(),
          })),
        );
      }),
    );

  shards
    .command('promote')
    .argument('<server>', 'the server to replace, by its name in the map (host:port/database)')
    .argument('<standby-url>', "the URL of its streaming standby, which becomes the shards' server")
    .description(
      "promote a server's standby and place its shards there under a newer epoch; the old server is set read-only when it answers",
    )
    .action((server: string, standbyUrl: string) =>
      operate(async ({ pool }) => {
        const promotion = await promoteStandby(pool, server, standbyUrl);
        output.result(
          promotion,
          `shards ${promotion.shards.join(', ')} now on ${promotion.standby} (epoch ${promotion.epoch}); ${server} ${promotion.oldServerFenced ? 'set read-only' : 'not reached: set read-only when it answers'}`,
        );
      }),
    );

  shards
    .command('move')
    .argument('<shard>', 'the logical shard, 0 to SHARDS - 1', nonNegativeInteger)
    .argument(
      '<server>',
      'where to: a server by its name in the map, or the PostgreSQL URL of one (added to the run servers)',
    )
    .description(
      "move a shard's runs to another server while they flow: copy, catch up from the log, fence, swap the map, verify, take the source's copy away",
    )
    .action((shard: number, server: string) =>
      operate(async ({ pool, store }) => {
        const config = loadConfig();
        const directory = await RunServerDirectory.open(
          config,
          { url: config.databaseUrl!, pool, eventStore: store },
          'chronicle-cli',
        );
        try {
          const source = directory.current.find((c) => c.shards.includes(shard));
          if (source === undefined)
            throw new CliError(
              `no server holds shard ${shard} (SHARDS=${config.shards}; see \`shards map\`)`,
              EXIT.usage,
            );
          const target = await directory.server(server);
          const report = await moveShard({
            control: pool,
            shards: config.shards,
            shard,
            source,
            target,
            logger: createLogger('warn'),
            progress: (step, figures = {}) => output.note(`shard ${shard}: ${step} ${JSON.stringify(figures)}`),
          });
          output.result(
            report,
            `shard ${shard} moved from ${report.from} to ${report.to} (epoch ${report.epoch}): ${report.streams} runs, ${report.events} events, claims paused ${report.pauseMs} ms, verified equal, the source's copy taken away`,
          );
        } finally {
          await directory.close();
        }
      }),
    );

  return [projections, shards, migrateCommand];
}

/** The read models' pool and the configured store for `work`, closed after it. */
async function operate(work: (operated: Operated) => Promise<void>): Promise<void> {
  const config = loadConfig();
  if (config.databaseUrl === undefined) throw new CliError('DATABASE_URL is not set', EXIT.usage);
  const pool = createPool({ connectionString: config.databaseUrl, max: 4, applicationName: 'chronicle-cli' });
  try {
    const store = await createEventStore(config, pool);
    try {
      await work({ pool, store });
    } finally {
      await store.close();
    }
  } finally {
    await pool.end();
  }
}

function rate(report: { events: number; seconds: number }): number {
  return Math.round(report.events / Math.max(report.seconds, 0.001));
}
