import type { INestApplication } from '@nestjs/common';
import { bodyLimits } from './http/body-limits';
import { setupOpenApi } from './openapi';

/**
 * What the API adds to its process's app before it listens: its JSON body parser (each endpoint's
 * limit, on the app itself so that it runs before any route, GraphQL's included) and the OpenAPI document.
 */
export function configureApi(app: INestApplication): void {
  app.use(bodyLimits());
  setupOpenApi(app);
}
