export * from './fake-scheduler-server';
export * from './wait-for';
