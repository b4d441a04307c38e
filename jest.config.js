/**
 * One run, three levels by suffix: *.spec.ts (pure), *.int-spec.ts (real
 * PostgreSQL), e2e/*.e2e-spec.ts (running app over HTTP). Every test file gets
 * its own database cloned from a migrated template (test/test-database.ts).
 */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
];

/** Our packages by name, as tsconfig.json's paths map them (one list, read from there). */
function moduleNameMapper() {
  const ts = require('typescript');
  const { config } = ts.readConfigFile(require.resolve('./tsconfig.json'), ts.sys.readFile);
  return Object.fromEntries(
    Object.entries(config.compilerOptions.paths).map(([name, [target]]) => [`^${name}$`, `<rootDir>/${target}`]),
  );
}

/**
 * ES-module-only packages the tests load. Node runs them from our CommonJS
 * through require(esm), but jest's module loader does not (before Node 24.9),
 * so jest compiles them to CommonJS like our own code.
 */
const ESM_PACKAGES = ['@nestjs', '@apidevtools/json-schema-ref-parser'];
const swcEsm = [
  '@swc/jest',
  { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } },
];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/e2e', '<rootDir>/test', '<rootDir>/bench'],
  testMatch: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts'],
  transform: { '^.+\\.ts$': swc, '^.+\\.js$': swcEsm },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_PACKAGES.join('|')})/)`],
  moduleNameMapper: moduleNameMapper(),
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  // Two cores: two workers, each with its own database.
  maxWorkers: 2,
  testTimeout: 60_000,
  watchman: false,
};
