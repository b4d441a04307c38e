import { addDays, createDatedPartition, createPool } from '@chronicle/platform';
import { PostgresEventStore, type ExpiryReport } from '@chronicle/event-store';
import { RunRetention } from '@chronicle/scheduler';
import { PROJECTIONS } from '@chronicle/projections';
import type { BenchSuite } from './compare/peer-comparison.suite';
import { chronicle, seededDatabase } from './rebuild.suite';
import { formatCount, formatTable } from './table';

/**
 * `npm run bench -- --only=storage`: the bytes a finished run costs, table and indexes and
 * events, at about 1,000,000 runs (100,000 with --quick; 3.6 events a run). The rebuild suite's log (runs going through
 * their lives as the commands write them), then every projection rebuilt from it by the CLI, as an
 * operator does, and each table's size (pg_total_relation_size: heap, TOAST and indexes; a partitioned
 * table's partitions summed) divided by the runs. Then the time retention takes to drop the days those
 * runs finished on (RunRetention, as of RETENTION_DAYS + 1 days later), and what it keeps of them, with the log's
 * week and the audit index's (dated five weeks back first, their weeks being the database clock's) and their run streams.
 * Asked for by name only: seeding 3.7 million events takes minutes, every time (a kept log would not survive the passes).
 */
const EVENTS = { full: 3_700_000, quick: 370_000 };
const RETENTION_DAYS = 30;

interface TableSize {
  readonly table: string;
  readonly rows: number;
  readonly bytes: number;
}

export const storage: BenchSuite = {
  name: 'storage',
  scenarios: ['storage'],
  run: async (server, options) => {
    const events = options.sizes.repetitions === 1 ? EVENTS.quick : EVENTS.full;
    // A log of its own each time, whatever --keep-seed says: the retention passes below drop what a kept one holds.
    const { url, drop } = await seededDatabase(server, events, { ...options, keepSeed: false });
    try {
      for (const projection of PROJECTIONS) {
        options.progress(`rebuilding ${projection.name}`);
        await chronicle(url, ['projections', 'rebuild', projection.name]);
      }
      // Two clients at least: the retention pass holds one while the log's expiry takes another, as on a running scheduler.
      const pool = createPool({ connectionString: url, max: 3, applicationName: 'bench-storage' });
      try {
        // The days' partitions, as the scheduler has them on a running system (a fresh database has none yet:
        // the rebuild put the finished runs in the default partition).
        options.progress('sorting the runs into their days');
        await new RunRetention(pool, new PostgresEventStore(pool), RETENTION_DAYS).retainOnce();
        await pool.query('VACUUM ANALYZE');
        const { rows } = await pool.query<{ table: string; rows: string; bytes: string }>(
          `SELECT coalesce(p.relname, c.relname) AS table, sum(greatest(c.reltuples, 0))::bigint AS rows,
                  sum(pg_total_relation_size(c.oid))::bigint AS bytes
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class p ON p.oid = i.inhparent
            WHERE n.nspname = 'public' AND c.relkind = 'r'
            GROUP BY 1 HAVING sum(pg_total_relation_size(c.oid)) > 65536
            ORDER BY 3 DESC`,
        );
        const { rows: counted } = await pool.query<{ runs: string; finished: string }>(
          `SELECT count(*) AS runs, count(*) FILTER (WHERE state IN ('succeeded', 'dead', 'cancelled')) AS finished FROM runs`,
        );
        const runs = Number(counted[0]!.runs);
        const finished = Number(counted[0]!.finished);
        const tables: TableSize[] = rows.map((r) => ({ table: r.table, rows: Number(r.rows), bytes: Number(r.bytes) }));
        const total = tables.reduce((sum, t) => sum + t.bytes, 0);
        const later = new Date(Date.now() + (RETENTION_DAYS + 1) * 86_400_000);
        const pass = (): ReturnType<RunRetention['retainOnce']> =>
          new RunRetention(pool, new PostgresEventStore(pool), RETENTION_DAYS, () => later).retainOnce();
        // The days first, alone: the log's weeks and the audit index's are this week's still.
        options.progress('dropping the days past retention');
        let started = Date.now();
        const days = await pass();
        const daySeconds = (Date.now() - started) / 1000;
        // Then the log as if written five weeks ago (its weeks are the database clock's): the next pass
        // finds that week past, as it would RETENTION_DAYS + 1 days later.
        options.progress('dating the log five weeks back');
        const { rows: weeks } = await pool.query<{ week: string }>(
          `SELECT date_trunc('week', clock_timestamp() AT TIME ZONE 'UTC')::date::text AS week`,
        );
        const thisWeek = weeks[0]!.week;
        const logWeek = addDays(thisWeek, -35);
        await createDatedPartition(
          pool,
          { table: 'events', column: 'kept_on', prefix: 'events_w', defaultPartition: 'events_unsorted' },
          logWeek,
          false,
        );
        await pool.query(`UPDATE events SET kept_on = $1 WHERE kept_on = $2`, [logWeek, thisWeek]);
        options.progress("dropping the log's week");
        started = Date.now();
        const weeksPass = await pass();
        const retention = {
          seconds: daySeconds,
          weekSeconds: (Date.now() - started) / 1000,
          droppedDays: days?.droppedDays.length ?? 0,
          retiredRuns: days?.retiredRuns ?? 0,
          log: weeksPass?.log,
          retiredBytes: Number(
            (await pool.query<{ bytes: string }>("SELECT pg_total_relation_size('retired_runs') AS bytes")).rows[0]!
              .bytes,
          ),
        };
        return {
          print: (out) => out.write(formatReport(server.description, events, runs, finished, tables, total, retention)),
          json: { server: server.description, events, runs, finished, tables, bytesPerRun: total / runs, retention },
        };
      } finally {
        await pool.end();
      }
    } finally {
      await drop();
    }
  },
};

function formatReport(
  server: string,
  events: number,
  runs: number,
  finished: number,
  tables: readonly TableSize[],
  total: number,
  retention: {
    seconds: number;
    weekSeconds: number;
    droppedDays: number;
    retiredRuns: number;
    retiredBytes: number;
    log: ExpiryReport | undefined;
  },
): string {
  const perRun = (bytes: number): string => (bytes / runs).toFixed(0);
  return (
    `\nstorage per run on ${server}\n` +
    `${formatCount(runs)} runs (${formatCount(finished)} finished) from a log of ${formatCount(events)} events, every projection rebuilt\n\n` +
    formatTable([
      ['table', 'rows', 'MB', 'bytes per run'],
      ...tables.map((t) => [t.table, formatCount(t.rows), (t.bytes / 1e6).toFixed(1), perRun(t.bytes)]),
      ['all', '', (total / 1e6).toFixed(1), perRun(total)],
    ]) +
    `\nretention pass ${RETENTION_DAYS + 1} days later: ${retention.droppedDays} day(s) and ${formatCount(retention.retiredRuns)} runs ` +
    `dropped in ${retention.seconds.toFixed(2)} s (ids kept: ${(retention.retiredBytes / Math.max(1, retention.retiredRuns)).toFixed(1)} bytes a run)\n` +
    `then a pass ${retention.weekSeconds.toFixed(2)} s:\n` +
    `the log: ${retention.log?.droppedWeeks.length ?? 0} week(s) dropped, ${formatCount(retention.log?.expiredStreams ?? 0)} run streams ` +
    `with it, ${formatCount(retention.log?.keptStreams ?? 0)} moved on to this week (runs kept)\n`
  );
}
