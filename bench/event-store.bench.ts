import { randomUUID } from 'node:crypto';
import { PostgresEventStore, START, type EventToAppend } from '@chronicle/event-store';
import { createPool } from '@chronicle/platform';
import { createBenchDatabase } from './bench-database';
import { formatCount, formatTable } from './table';

/**
 * `npm run bench:event-store`: appends/s with 8 concurrent writers for 1- and
 * 100-event appends, and the global-log read rate, on the database in use.
 * A script, not a test: it bounds its own time (BENCH_SECONDS per scenario).
 */
const WRITERS = 8;
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const REPETITIONS = Number(process.env['BENCH_REPETITIONS'] ?? 3);

interface Run {
  events: number;
  seconds: number;
  eventsPerSecond: number;
  appendsPerSecond?: number;
}

interface Row {
  scenario: string;
  runs: Run[];
  median: Run;
}

function runEvent(i: number): EventToAppend {
  return {
    type: 'RunScheduled',
    data: {
      job: 'billing.export-invoices',
      queue: 'billing',
      priority: 'default',
      dueAt: '2026-03-15T01:00:00.000Z',
      attempt: 1,
      payload: { format: 'csv', n: i },
    },
    metadata: { actor: 'team:billing', schemaVersion: 1, correlationId: randomUUID() },
  };
}

async function appendLoad(store: PostgresEventStore, eventsPerAppend: number, repetition: number): Promise<Run> {
  const deadline = Date.now() + SECONDS * 1000;
  let appends = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, writer) => {
      for (let n = 0; Date.now() < deadline; n++) {
        // Each append opens a new stream, as enqueueing runs does.
        await store.appendToStream(
          `run-${repetition}-${writer}-${eventsPerAppend}-${n}`,
          'no_stream',
          Array.from({ length: eventsPerAppend }, (_, i) => runEvent(i)),
        );
        appends++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const events = appends * eventsPerAppend;
  return { events, seconds, eventsPerSecond: events / seconds, appendsPerSecond: appends / seconds };
}

async function readLoad(store: PostgresEventStore, batchSize: number): Promise<Run> {
  let from = START;
  let events = 0;
  const started = process.hrtime.bigint();
  while (true) {
    const batch = await store.readAll({ from, maxCount: batchSize });
    if (batch.length === 0) break;
    events += batch.length;
    from = batch[batch.length - 1]!.position;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { events, seconds, eventsPerSecond: events / seconds };
}

async function main(): Promise<void> {
  const db = await createBenchDatabase();
  const pool = createPool({ connectionString: db.url, max: WRITERS + 2, applicationName: 'bench-event-store' });
  const store = new PostgresEventStore(pool);
  try {
    const rows: Row[] = [];
    for (const size of [1, 100]) {
      const runs: Run[] = [];
      for (let r = 0; r < REPETITIONS; r++) runs.push(await appendLoad(store, size, r));
      rows.push(summarise(`append, ${size} event${size > 1 ? 's' : ''} per append, ${WRITERS} writers`, runs));
    }
    await pool.query('VACUUM ANALYZE events');
    for (const size of [1000, 5000]) {
      const runs: Run[] = [];
      for (let r = 0; r < REPETITIONS; r++) runs.push(await readLoad(store, size));
      rows.push(summarise(`read global log, batches of ${size}`, runs));
    }
    print(db.server, rows);
  } finally {
    await pool.end();
    await db.drop();
  }
}

function summarise(scenario: string, runs: Run[]): Row {
  const sorted = [...runs].sort((a, b) => a.eventsPerSecond - b.eventsPerSecond);
  return { scenario, runs, median: sorted[Math.floor(sorted.length / 2)]! };
}

function print(server: string, rows: Row[]): void {
  if (process.argv.includes('--json')) {
    process.stdout.write(
      JSON.stringify({ server, writers: WRITERS, secondsPerRun: SECONDS, repetitions: REPETITIONS, rows }, null, 2) +
        '\n',
    );
    return;
  }
  const range = (runs: Run[], pick: (run: Run) => number | undefined): string => {
    const values = runs.map(pick).filter((v): v is number => v !== undefined);
    return values.length === 0 ? '' : `${formatCount(Math.min(...values))}–${formatCount(Math.max(...values))}`;
  };
  process.stdout.write(
    `event store benchmark on ${server}\n${REPETITIONS} runs per scenario, appends for ${SECONDS} s each\n\n`,
  );
  process.stdout.write(
    formatTable([
      ['scenario', 'events/s (median)', 'min–max', 'appends/s (median)', 'events per run'],
      ...rows.map((r) => [
        r.scenario,
        formatCount(r.median.eventsPerSecond),
        range(r.runs, (x) => x.eventsPerSecond),
        formatCount(r.median.appendsPerSecond),
        formatCount(r.median.events),
      ]),
    ]),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
