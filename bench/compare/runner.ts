import type { BenchServer } from '../bench-database';
import { CEILING_METRICS, measureCeiling } from './ceiling';
import type { QueueSystemFactory } from './queue-system';
import type { Measurement, Metric, Scenario, Sizes } from './scenario';

export const CEILING = 'ceiling';

/** Every repetition of one scenario on one system (or of the ceiling on PostgreSQL). */
export interface Series {
  readonly scenario: string;
  readonly title: string;
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
      const measurement = await onFreshDatabase(server, (url) => measureCeiling(url, sizes.ceilingSeconds));
      seriesOf(
        { scenario: CEILING, title: 'PostgreSQL ceiling', metrics: CEILING_METRICS },
        { label: 'postgresql', system: 'postgresql', config: 'plain INSERTs', settings: '8 writers, autocommit' },
      ).measurements.push(measurement);
      progress(`${tag} ${CEILING}: ${describe(measurement)}`);
    }
    const order = systems.map((_, i) => systems[(i + repetition) % systems.length]!);
    for (const scenario of scenarios) {
      for (const factory of order) {
        const system = factory.create();
        const measurement = await onFreshDatabase(server, async (url) => {
          try {
            await system.start(url);
            return await scenario.run(system, sizes);
          } finally {
            await system.stop();
          }
        }).catch((error: unknown): Measurement => ({
          values: {},
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
  return [...series.values()];
}

async function onFreshDatabase<T>(server: BenchServer, work: (url: string) => Promise<T>): Promise<T> {
  const db = await server.createDatabase('scheduler_bench_cmp');
  try {
    return await work(db.url);
  } finally {
    await db.drop();
  }
}

function describe(measurement: Measurement): string {
  const values = Object.entries(measurement.values).map(
    ([key, value]) => `${key} ${Math.round(value).toLocaleString('en-US')}`,
  );
  return [...values, ...(measurement.note === undefined ? [] : [`(${measurement.note})`])].join(', ');
}
