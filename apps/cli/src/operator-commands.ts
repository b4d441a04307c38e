import { Command } from 'commander';
import { moveShard } from '@chronicle/commands';
import { createLogger, loadConfig, migrate, promoteStandby } from '@chronicle/platform';
import { operate } from './operate';
import { CliError, EXIT, nonNegativeInteger, type Output } from './output';
import { projectionCommands } from './projection-commands';

/** Whether an error says the database could not be reached (exit code 3). */
export { isUnavailable } from '@chronicle/platform';

/**
 * The operator's commands, against the database itself (DATABASE_URL, and
 * the event store settings the server reads): projections status, rebuild
 * and verify (projection-commands.ts), the shards' map, promotion and move,
 * and migrate.
 */
export function operatorCommands(output: Output): Command[] {
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
      operate(async ({ config, pool, runServers }) => {
        const directory = await runServers();
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
      }),
    );

  return [projectionCommands(output), shards, migrateCommand];
}
