/** The public surface of this package: what the other packages of the repository import from it. */
export { ProjectionRunner } from './projection-runner';
export { ProjectorModule } from './projector.module';
export { type RebuildProgress, eventsInLog, rebuildProjection, verifyProjections } from './rebuild/projection-rebuild';
