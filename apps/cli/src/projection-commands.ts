import { Command } from 'commander';
import { CONTROL_SERVER } from '@chronicle/event-store';
import {
  PROJECTIONS,
  loadCheckpoint,
  eventsInLog,
  rebuildProjection,
  verifyProjections,
  type RebuildProgress,
  type ServerProjections,
  type VerifyReport,
} from '@chronicle/projections';
import { operate, projectionsOfDeployment } from './operate';
import { CliError, EXIT, positiveInteger, type Output } from './output';

/**
 * `chronicle projections status|rebuild|verify`, on every database that keeps projections: the control
 * database, and with runs on several servers (docs/sharding.md) each of them, whose runs' read models
 * are built from its own log and its copy of `jobs` from the control database's. Without a shard map
 * there is the control database alone, and the output names no server.
 */
export function projectionCommands(output: Output): Command {
  const projections = new Command('projections').description(
    "the read models built from the log: each one's checkpoint, rebuilds, checks",
  );

  projections
    .command('status')
    .description("each projection's version and checkpoint (on each server, with runs on several)")
    .action(() =>
      operate(async (operated) => {
        const deployment = await projectionsOfDeployment(operated);
        const several = severalServers(deployment);
        const rows = await Promise.all(
          deployment.flatMap(({ server, log, pool, projections }) =>
            projections.map(async (projection) => {
              const checkpoint = await loadCheckpoint(pool, projection.name);
              const row = {
                projection: projection.name,
                version: projection.version,
                storedVersion: checkpoint?.version ?? null,
                commitPosition: checkpoint?.position.commit.toString() ?? null,
                preparePosition: checkpoint?.position.prepare.toString() ?? null,
                tables: projection.tables.join(', '),
              };
              // `log`: the jobs copy's checkpoint is a position in the control database's log.
              return several ? { server, ...row, log } : row;
            }),
          ),
        );
        output.table(rows);
      }),
    );

  projections
    .command('rebuild')
    .argument('<name>', `one of ${PROJECTIONS.map((p) => p.name).join(', ')}`)
    .description(
      'build the projection afresh from the log beside the live tables, then swap it in, on every server that keeps it; nothing stops',
    )
    .option('--batch-size <events>', 'events per read of the log (default 20000)', positiveInteger)
    .action((name: string, options: { batchSize: number }) =>
      operate(async (operated) => {
        const projection = PROJECTIONS.find((p) => p.name === name);
        if (projection === undefined)
          throw new CliError(`no projection ${name}: ${PROJECTIONS.map((p) => p.name).join(', ')}`, EXIT.usage);
        const deployment = await projectionsOfDeployment(operated);
        const several = severalServers(deployment);
        const rebuilt: Rebuilt[] = [];
        for (const { server, log, store, pool } of deployment.filter((d) => d.projections.includes(projection))) {
          const progress = output.progress(
            `rebuilding ${name}${several ? ` on ${server}${fromLog({ server, log })}` : ''}`,
            await eventsInLog(store),
          );
          const report = await rebuildProjection(store, pool, projection, {
            batchSize: options.batchSize,
            onProgress: (p: RebuildProgress) => progress.update(p.events, p.phase),
          }).catch((err: unknown) => {
            // The servers before it are rebuilt and swapped in; those after it are left as they were.
            if (several) output.note(`rebuilding ${name} on ${server} failed; rebuilt on: ${names(rebuilt)}`);
            throw err;
          });
          progress.stop();
          rebuilt.push({ server, log, events: report.events, seconds: report.seconds, eventsPerSecond: rate(report) });
        }
        const sentence = (r: Rebuilt): string =>
          `rebuilt ${name}${several ? ` on ${r.server}${fromLog(r)}` : ''}: ${r.events} events in ${r.seconds.toFixed(1)} s (${r.eventsPerSecond} events/s), swapped in`;
        if (!several) {
          const { events, seconds, eventsPerSecond } = rebuilt[0]!;
          output.result({ projection: name, events, seconds, eventsPerSecond }, sentence(rebuilt[0]!));
        } else output.result({ projection: name, servers: rebuilt }, rebuilt.map(sentence).join('\n'));
      }),
    );

  projections
    .command('verify')
    .description(
      'rebuild every projection into a scratch schema and compare it with the live tables, row by row, on every server',
    )
    .option('--batch-size <events>', 'events per read of the log (default 20000)', positiveInteger)
    .action((options: { batchSize: number }) =>
      operate(async (operated) => {
        const deployment = await projectionsOfDeployment(operated);
        const several = severalServers(deployment);
        const verified: Array<VerifyReport & { server: string; log: string; projections: string[] }> = [];
        // One database after another: each verification takes the cores and its server's lock
        // (`projection-verify`) while it builds.
        for (const { server, log, store, pool, projections } of deployment) {
          const title = several ? `verifying on ${server}${fromLog({ server, log })}` : 'verifying';
          const progress = output.progress(title, await eventsInLog(store));
          const report = await verifyProjections(store, pool, projections, {
            batchSize: options.batchSize,
            onProgress: (p: RebuildProgress) => progress.update(p.events, p.phase),
          });
          progress.stop();
          verified.push({ server, log, projections: projections.map((p) => p.name), ...report });
        }
        const events = verified.reduce((sum, v) => sum + v.events, 0);
        const seconds = verified.reduce((sum, v) => sum + v.seconds, 0);
        const differing = verified.filter((v) => v.differences.length > 0);
        const differences = verified.flatMap((v) => v.differences.map((d) => ({ server: v.server, ...d })));
        if (!several) {
          const summary = `verified ${PROJECTIONS.length} projections over ${events} events in ${seconds.toFixed(1)} s (${rate({ events, seconds })} events/s): ${differences.length} differences`;
          output.result({ events, seconds, differences: verified[0]!.differences }, summary);
        } else {
          const projectionCount = verified.reduce((sum, v) => sum + v.projections.length, 0);
          const servers = new Set(verified.map((v) => v.server)).size;
          const lines = verified.map(
            (v) =>
              `  ${v.server}: ${v.projections.join(', ')}${fromLog(v)}: ${v.events} events in ${v.seconds.toFixed(1)} s (${rate(v)} events/s), ${v.differences.length} differences`,
          );
          const summary = `verified ${projectionCount} projections on ${servers} servers: ${differences.length} differences`;
          const perServer = verified.map((v) => ({ ...v, differences: v.differences.length }));
          output.result({ events, seconds, differences, servers: perServer }, [summary, ...lines].join('\n'));
        }
        if (differences.length > 0) {
          output.table(
            differences.map((d) => ({
              ...(several ? { server: d.server } : {}),
              table: d.table,
              kind: d.kind,
              key: d.key,
            })),
          );
          const where = several ? ` on ${names(differing)}` : '';
          throw new CliError(`${differences.length} rows differ from the log${where}`, EXIT.failed);
        }
      }),
    );

  return projections;
}

/** One database's rebuild of a projection. */
interface Rebuilt {
  readonly server: string;
  readonly log: string;
  readonly events: number;
  readonly seconds: number;
  readonly eventsPerSecond: number;
}

/** Whether the deployment keeps projections on servers besides the control database (a shard map). */
function severalServers(deployment: readonly ServerProjections[]): boolean {
  return deployment.some((d) => d.server !== CONTROL_SERVER);
}

/** A server's copy built from another server's log (its `jobs`, from the control database's), said so. */
function fromLog({ server, log }: { server: string; log: string }): string {
  return log === server ? '' : ` (from the ${log} log)`;
}

function names(servers: ReadonlyArray<{ server: string }>): string {
  return [...new Set(servers.map((s) => s.server))].join(', ') || 'none';
}

function rate(report: { events: number; seconds: number }): number {
  return Math.round(report.events / Math.max(report.seconds, 0.001));
}
