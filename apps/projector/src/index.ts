export * from './projection-runner';
export * from './projector.module';
export * from './projector.service';
