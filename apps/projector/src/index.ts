/** The public surface of this package: what the other packages of the repository import from it. */
export { ProjectorModule } from './projector.module';
