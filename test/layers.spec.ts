import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/**
 * The layer rules of `npm run lint` (.dependency-cruiser.cjs) must actually
 * fire: each probe is a file put for a moment where a developer might put
 * it, importing what its layer must not (or may) import.
 */
const ROOT = path.resolve(__dirname, '..');
const PROBES: ReadonlyArray<readonly [file: string, imports: string, rule: string | null]> = [
  ['libs/domain/src/layer-probe.ts', '@chronicle/platform', 'domain-imports-only-nothing-of-ours'],
  ['libs/platform/src/layer-probe.ts', '@chronicle/event-store', 'platform-imports-only-lower-layers'],
  ['libs/event-store/src/layer-probe.ts', '@chronicle/projections', 'event-store-imports-only-lower-layers'],
  ['libs/projections/src/layer-probe.ts', '@chronicle/commands', 'projections-imports-only-lower-layers'],
  ['apps/cli/src/layer-probe.ts', '@chronicle/projector', 'cli-imports-only-lower-layers'],
  ['libs/commands/src/layer-probe.ts', '@chronicle/api', 'commands-imports-only-lower-layers'],
  ['libs/runtime/src/layer-probe.ts', '@chronicle/commands', 'runtime-imports-only-lower-layers'],
  ['apps/api/src/layer-probe.ts', '@chronicle/scheduler', 'api-imports-only-lower-layers'],
  ['apps/scheduler/src/layer-probe.ts', '@chronicle/testing', 'no-tests-in-production-code'],
  ['apps/projector/src/layer-probe.ts', '@chronicle/projections', null],
  ['apps/dashboard/src/layer-probe.ts', '@chronicle/platform', 'dashboard-imports-only-the-vocabulary'],
  ['apps/dashboard/src/layer-probe-vocabulary.ts', '@chronicle/domain/vocabulary', null],
  ['apps/api/src/layer-probe-dashboard.ts', '../../dashboard/src/app', 'nothing-imports-the-dashboard'],
  ['libs/commands/src/workers/layer-probe.ts', '../runs/layer-probe-cycle', 'no-circular'],
  ['libs/commands/src/runs/layer-probe-cycle.ts', '../workers/layer-probe', 'no-circular'],
];

describe('the layer rules', () => {
  let violations: Map<string, string[]>;

  beforeAll(() => {
    try {
      for (const [file, imports] of PROBES)
        writeFileSync(path.join(ROOT, file), `import * as probe from '${imports}';\nexport const x = probe;\n`);
      const depcruise = path.join(ROOT, 'node_modules', '.bin', 'depcruise');
      // Exits non-zero when it finds violations: the report is what is asserted on.
      let output: string;
      try {
        output = execFileSync(depcruise, ['--output-type', 'json', ...PROBES.map(([file]) => file)], {
          cwd: ROOT,
          encoding: 'utf8',
          maxBuffer: 64 << 20,
        });
      } catch (err) {
        output = (err as { stdout: string }).stdout;
      }
      const report = JSON.parse(output) as { summary: { violations: Array<{ from: string; rule: { name: string } }> } };
      violations = new Map(
        PROBES.map(([file]) => [
          file,
          report.summary.violations.filter((v) => v.from === file).map((v) => v.rule.name),
        ]),
      );
    } finally {
      for (const [file] of PROBES) rmSync(path.join(ROOT, file), { force: true });
    }
  }, 60_000);

  it.each(PROBES)('%s importing %s: %s', (file, _imports, rule) => {
    if (rule === null) expect(violations.get(file)).toEqual([]);
    // A cycle is reported from one of its files, whichever the cruise meets first.
    else if (rule === 'no-circular')
      expect(PROBES.filter((p) => p[2] === rule).flatMap(([f]) => violations.get(f)!)).toContain(rule);
    else expect(violations.get(file)).toContain(rule);
  });
});
