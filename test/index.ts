export * from './catch-up';
export * from './seed';
export * from './test-database';
export * from './test-environment';
export * from './wait-for';
