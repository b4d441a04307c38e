export * from './projection-runner';
export * from './projector.module';
export * from './projector.service';
export * from './rebuild/projection-rebuild';
export * from './rebuild/shadow-tables.sql';
