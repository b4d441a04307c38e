export * from './api-client';
export * from './graphql-client';
export * from './prometheus-text';
export * from './start-app';
export * from './team-tokens';
export * from './wait-healthy';
export * from './build-dist';
export * from './quiet-worker-logger';
