export * from './catch-up';
export * from './kurrentdb-server';
export * from './seed';
export * from './test-database';
export * from './test-environment';
export { waitFor, type WaitOptions } from '@chronicle/worker-sdk/testing';
export * from './worker-handlers';
export * from './query-plan';
export * from './captured-logs';
