/**
 * The layers (docs/architecture.md, "Where things are"), arrows pointing down only:
 *
 *   apps/server -> apps/{api, scheduler, projector} -> libs/commands -> libs/projections -> libs/event-store
 *                                                    -> libs/runtime ----------------------> libs/event-store
 *   apps/cli -> libs/commands (a shard's move), libs/projections (rebuild, verify); libs/event-store ->
 *   libs/platform. The projections,
 *   with their runner, rebuild and verify, sit below the command side, which writes their rows
 *   through in the append's transaction.
 *   libs/domain and libs/worker-sdk import nothing of ours; everything may import them (libs/platform
 *   only the domain: the configuration parses the domain's policies).
 *   apps/dashboard (browser code, bundled by Vite) imports only the domain's vocabulary, and nothing
 *   imports it: the API serves its build, dist/dashboard, as files.
 *
 * `npm run lint` runs this; test/layers.spec.ts shows that a
 * forbidden import fails it.
 */
const layer = (name, path, mayImport) => ({
  name: `${name}-imports-only-${mayImport.length === 0 ? 'nothing-of-ours' : 'lower-layers'}`,
  comment: `${path} may import ${mayImport.length === 0 ? 'nothing of ours' : mayImport.join(', ')}`,
  severity: 'error',
  from: { path: `^${path}/` },
  // test/ holds the tests' helpers: no-tests-in-production-code keeps shipped code away from them.
  to: {
    path: '^(apps|libs|test|e2e|bench)/',
    pathNot: [`^${path}/`, '^test/', ...mayImport.map((p) => `^${p}/`)],
  },
});

const OURS = {
  domain: 'libs/domain',
  sdk: 'libs/worker-sdk',
  platform: 'libs/platform',
  eventStore: 'libs/event-store',
  projections: 'libs/projections',
  commands: 'libs/commands',
  runtime: 'libs/runtime',
};
const FOUNDATIONS = [OURS.domain, OURS.sdk];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'a cycle makes two modules one; split what they share into a lower layer',
      from: {},
      to: { circular: true },
    },
    layer('domain', OURS.domain, []),
    layer('worker-sdk', OURS.sdk, []),
    layer('platform', OURS.platform, [OURS.domain]),
    layer('event-store', OURS.eventStore, [OURS.platform, ...FOUNDATIONS]),
    layer('projections', OURS.projections, [OURS.eventStore, OURS.platform, ...FOUNDATIONS]),
    layer('commands', OURS.commands, [OURS.projections, OURS.eventStore, OURS.platform, ...FOUNDATIONS]),
    layer('runtime', OURS.runtime, [OURS.eventStore, OURS.platform, ...FOUNDATIONS]),
    layer('api', 'apps/api', [OURS.commands, OURS.runtime, OURS.eventStore, OURS.platform, ...FOUNDATIONS]),
    layer('scheduler', 'apps/scheduler', [
      OURS.commands,
      OURS.projections,
      OURS.runtime,
      OURS.eventStore,
      OURS.platform,
      ...FOUNDATIONS,
    ]),
    {
      name: 'dashboard-imports-only-the-vocabulary',
      comment:
        'apps/dashboard runs in the browser: of our code only libs/domain/src/vocabulary.ts and what it re-exports',
      severity: 'error',
      from: { path: '^apps/dashboard/' },
      to: {
        path: '^(apps|libs|test|e2e|bench)/',
        pathNot: ['^apps/dashboard/', '^libs/domain/src/vocabulary\\.ts$'],
      },
    },
    {
      name: 'nothing-imports-the-dashboard',
      comment: 'the dashboard is served as built files (dist/dashboard), never imported',
      severity: 'error',
      from: { pathNot: '^apps/dashboard/' },
      to: { path: '^apps/dashboard/' },
    },
    layer('cli', 'apps/cli', [OURS.commands, OURS.projections, OURS.eventStore, OURS.platform, ...FOUNDATIONS]),
    layer('projector', 'apps/projector', [
      OURS.projections,
      OURS.runtime,
      OURS.eventStore,
      OURS.platform,
      ...FOUNDATIONS,
    ]),
    {
      name: 'no-tests-in-production-code',
      comment: 'shipped code never imports test helpers',
      severity: 'error',
      from: { path: '^(apps|libs)/', pathNot: ['\\.(spec|int-spec|e2e-spec)\\.ts$', '/testing/'] },
      to: { path: ['^(test|e2e|bench)/', '\\.(spec|int-spec|e2e-spec)\\.ts$', '/testing/'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: {
      path: ['^dist/', '^libs/worker-sdk/dist/', '^examples/', 'node_modules', '^e2e/openapi-client/generated/'],
    },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'],
    },
  },
};
