/** The public surface of this package: what the other packages of the repository import from it. */
export { ApiModule } from './api.module';
export { configureApi } from './configure-api';
