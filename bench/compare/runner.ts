import type { BenchServer, ScratchDatabase } from '../bench-database';
import { CEILING_METRICS, measureCeiling } from './ceiling';
import type { QueueSystem, QueueSystemFactory, ScratchDatabases, SystemMeter } from './queue-system';
import type { MeasuredWindow, Measurement, Metric, Scenario, Sizes } from './scenario';
import { CpuMeter } from './cpu-meter';
import { StatementMeter } from './statement-meter';
import { WalMeter } from './wal-meter';

export const CEILING = 'ceiling';

/**
 * Figures read around and after each scenario, beside its own metrics, for
 * the systems that report them. The cost per run of its measured window:
 * the WAL and the machine's CPU time (every system: both are server-wide,
 * and each runs alone), where the CPU went (PostgreSQL, the system's own
 * processes, the bench's), what the WAL records say was written (heap rows,
 * index entries, full-page images: where the server has pg_walinspect), the
 * statements PostgreSQL ran (where pg_stat_statements is preloaded, as on
 * the bench's own server), and what a system measures of itself (our
 * server's JSON passes). Then the HOT share of the run table and the log
 * audit (ours: the peers keep no log).
 */
export const COST_METRICS: readonly Metric[] = [
  { key: 'walBytesPerRun', unit: 'WAL bytes/run', higherIsBetter: false },
  { key: 'walFullPageBytesPerRun', unit: '  of it full-page images', higherIsBetter: false },
  { key: 'cpuMicrosecondsPerRun', unit: 'CPU us/run (machine)', higherIsBetter: false },
  { key: 'cpuPostgresMicrosecondsPerRun', unit: '  of it PostgreSQL', higherIsBetter: false },
  { key: 'cpuSystemMicrosecondsPerRun', unit: "  of it the system's processes", higherIsBetter: false },
  { key: 'cpuBenchMicrosecondsPerRun', unit: '  of it the bench process', higherIsBetter: false },
  { key: 'heapRowsPerRun', unit: 'heap rows written/run', higherIsBetter: false },
  { key: 'hotUpdatesPerRun', unit: '  of them HOT updates', higherIsBetter: true },
  { key: 'indexEntriesPerRun', unit: 'index entries/run', higherIsBetter: false },
  { key: 'statementsPerRun', unit: 'statements/run (round trips)', higherIsBetter: false },
  { key: 'statementMicrosecondsPerRun', unit: 'statement time us/run', higherIsBetter: false },
  { key: 'jsonPassesPerRun', unit: 'JSON passes/run (server)', higherIsBetter: false },
  { key: 'jsonCharactersPerRun', unit: 'JSON characters/run (server)', higherIsBetter: false },
  { key: 'hotUpdatePercent', unit: 'HOT updates % (runs)', higherIsBetter: true },
  { key: 'logRunsChecked', unit: 'runs checked in the log', higherIsBetter: true, check: true },
  { key: 'logRunsMissingEvents', unit: 'runs missing events in the log', higherIsBetter: false, check: true },
];

/** Every repetition of one scenario on one system (or of the ceiling on PostgreSQL). */
export interface Series {
  readonly scenario: string;
  readonly title: string;
  /** The scenario's metrics, then those of COST_METRICS some repetition reported. */
  readonly metrics: readonly Metric[];
  readonly label: string;
  readonly system: string;
  readonly config: string;
  readonly settings: string;
  readonly measurements: Measurement[];
}

export interface ComparisonPlan {
  readonly server: BenchServer;
  readonly scenarios: readonly Scenario[];
  readonly systems: readonly QueueSystemFactory[];
  readonly withCeiling: boolean;
  readonly sizes: Sizes;
  readonly progress: (line: string) => void;
}

/**
 * Repetition by repetition, each scenario on every system in turn (the order
 * rotating each repetition, so no system always runs first or warm), each on
 * a database of its own that is dropped afterwards.
 */
export async function runComparison(plan: ComparisonPlan): Promise<Series[]> {
  const { server, scenarios, systems, sizes, progress } = plan;
  const series = new Map<string, Series>();
  const seriesOf = (
    scenario: Pick<Series, 'scenario' | 'title' | 'metrics'>,
    who: Omit<Series, 'scenario' | 'title' | 'metrics' | 'measurements'>,
  ): Series => {
    const key = `${scenario.scenario}/${who.label}`;
    if (!series.has(key)) series.set(key, { ...scenario, ...who, measurements: [] });
    return series.get(key)!;
  };
  for (let repetition = 0; repetition < sizes.repetitions; repetition++) {
    const tag = `run ${repetition + 1}/${sizes.repetitions}`;
    if (plan.withCeiling) {
      const measurement = await onFreshDatabases(server, (databases) =>
        measureCeiling(databases.url, sizes.ceilingSeconds),
      );
      seriesOf(
        { scenario: CEILING, title: 'PostgreSQL ceiling', metrics: CEILING_METRICS },
        { label: 'postgresql', system: 'postgresql', config: 'plain INSERTs', settings: '8 writers, autocommit' },
      ).measurements.push(measurement);
      progress(`${tag} ${CEILING}: ${describe(measurement)}`);
    }
    const order = systems.map((_, i) => systems[(i + repetition) % systems.length]!);
    for (const scenario of scenarios) {
      for (const factory of order) {
        if (factory.scenarios !== undefined && !factory.scenarios.includes(scenario.name)) continue;
        const system = factory.create();
        const measurement = await measure(server, scenario, system, sizes).catch((error: unknown): Measurement => ({
          values: {},
          failed: true,
          note: `failed: ${error instanceof Error ? error.message : String(error)}`,
        }));
        const who = { label: factory.label, system: system.system, config: system.config, settings: system.settings };
        seriesOf({ scenario: scenario.name, title: scenario.title, metrics: scenario.metrics }, who).measurements.push(
          measurement,
        );
        progress(`${tag} ${scenario.name} ${factory.label}: ${describe(measurement)}`);
      }
    }
  }
  return [...series.values()].map((s) => ({
    ...s,
    metrics: [...s.metrics, ...COST_METRICS.filter((m) => s.measurements.some((r) => m.key in r.values))],
  }));
}

/**
 * One scenario on one system on databases of its own: its figures, the cost
 * of its window, then what is read once it has stopped and nobody is
 * connected any more.
 */
async function measure(
  server: BenchServer,
  scenario: Scenario,
  system: QueueSystem,
  sizes: Sizes,
): Promise<Measurement> {
  return onFreshDatabases(server, async (databases, waitUntilIdle) => {
    const wal = new WalMeter(databases.url);
    const statements = new StatementMeter(databases.url);
    const cpu = new CpuMeter(() => system.processIds?.() ?? []);
    const own = system.meters ?? [];
    let measured: Measurement;
    try {
      await system.start(databases);
      // The CPU meter innermost: the others' reads at the edges are not the system's cost.
      measured = await scenario.run(system, sizes, nested([wal, statements, ...own, cpu]));
    } finally {
      await Promise.all([wal.end(), statements.end(), ...own.map((meter) => meter.end())]);
      await system.stop();
    }
    const topStatements = statements.costPerRun()?.top;
    const topWalRecords = wal.breakdownPerRun()?.top;
    const walByRelation = wal.breakdownPerRun()?.byRelation;
    return addFiguresAfterStop(
      {
        ...measured,
        ...(topStatements === undefined ? {} : { topStatements }),
        ...(topWalRecords === undefined ? {} : { topWalRecords }),
        ...(walByRelation === undefined ? {} : { walByRelation }),
      },
      system,
      windowCosts(wal, statements, cpu, own),
      await waitUntilIdle(),
    );
  });
}

/** One measured window for several meters, opened in order before the clock starts and closed in reverse after. */
function nested(meters: readonly MeasuredWindow[]): MeasuredWindow {
  return {
    open: async () => {
      for (const meter of meters) await meter.open();
    },
    close: async (runs) => {
      for (const meter of [...meters].reverse()) await meter.close(runs);
    },
  };
}

/** The window's cost figures by COST_METRICS key: those a meter could measure. */
function windowCosts(
  wal: WalMeter,
  statements: StatementMeter,
  cpu: CpuMeter,
  own: readonly SystemMeter[],
): Record<string, number | undefined> {
  const written = wal.breakdownPerRun();
  const ran = statements.costPerRun();
  const shares = cpu.microsecondsPerRun();
  return {
    walBytesPerRun: wal.bytesPerRun(),
    walFullPageBytesPerRun: written?.fullPageBytes,
    cpuMicrosecondsPerRun: shares?.machine,
    cpuPostgresMicrosecondsPerRun: shares?.postgres,
    // A system inside the bench has no processes of its own: its time is the bench's.
    cpuSystemMicrosecondsPerRun: shares === undefined || shares.system === 0 ? undefined : shares.system,
    cpuBenchMicrosecondsPerRun: shares?.bench,
    heapRowsPerRun: written?.heapRows,
    hotUpdatesPerRun: written?.hotUpdates,
    indexEntriesPerRun: written?.indexEntries,
    statementsPerRun: ran?.statements,
    statementMicrosecondsPerRun: ran?.microseconds,
    ...Object.assign({}, ...own.map((meter) => meter.figuresPerRun())),
  };
}

/**
 * The log audit (a log without the scenario's runs fails the repetition:
 * its speed must not count) and the HOT share, beside the window's WAL and CPU.
 * `idle`: nobody was connected any more, so every table statistic had been
 * flushed; otherwise no HOT share rather than a short one.
 */
async function addFiguresAfterStop(
  measured: Measurement,
  system: QueueSystem,
  costs: Readonly<Record<string, number | undefined>>,
  idle: boolean,
): Promise<Measurement> {
  const values: Record<string, number> = { ...measured.values };
  const notes = measured.note === undefined ? [] : [measured.note];
  for (const [key, value] of Object.entries(costs)) if (value !== undefined) values[key] = value;
  const hot = idle ? await system.hotUpdatePercent() : undefined;
  if (hot !== undefined) values['hotUpdatePercent'] = hot;
  if (!idle) notes.push('still connected after stop: no HOT share');
  const audit = measured.runs === undefined ? undefined : await system.auditLog(measured.runs);
  if (audit !== undefined) {
    values['logRunsChecked'] = audit.checked;
    values['logRunsMissingEvents'] = audit.missing;
  }
  const logFailed = audit !== undefined && audit.missing > 0;
  if (logFailed) notes.unshift(`failed: the log lacks events: ${audit.detail}`);
  return {
    ...measured,
    values,
    ...(notes.length > 0 ? { note: notes.join('; ') } : {}),
    ...(logFailed ? { failed: true } : {}),
  };
}

/**
 * `work` on a fresh database and on any other it asks for, each dropped
 * afterwards once its connections are gone; `waitUntilIdle` resolves true
 * once nobody is connected to any of them.
 */
export async function onFreshDatabases<T>(
  server: BenchServer,
  work: (databases: ScratchDatabases, waitUntilIdle: () => Promise<boolean>) => Promise<T>,
  prefix = 'scheduler_bench_cmp',
): Promise<T> {
  const own = await server.createDatabase(prefix);
  const all: ScratchDatabase[] = [own];
  const databases: ScratchDatabases = {
    url: own.url,
    create: async (prefix) => {
      const db = await server.createDatabase(prefix);
      all.push(db);
      return db.url;
    },
  };
  const waitUntilIdle = async (): Promise<boolean> =>
    (await Promise.all(all.map((db) => db.waitUntilIdle()))).every((idle) => idle);
  try {
    return await work(databases, waitUntilIdle);
  } finally {
    for (const db of all) await db.drop();
  }
}

function describe(measurement: Measurement): string {
  const values = Object.entries(measurement.values).map(
    ([key, value]) => `${key} ${Math.round(value).toLocaleString('en-US')}`,
  );
  return [...values, ...(measurement.note === undefined ? [] : [`(${measurement.note})`])].join(', ');
}
