export * from './admin-token';
export * from './health.controller';
export * from './http-metrics';
export * from './metrics.controller';
export * from './run-process';
export * from './runtime.module';
export * from './runtime';
export * from './startup-error';
