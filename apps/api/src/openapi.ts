import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';

/** The OpenAPI document of /v1, generated from the controllers: the UI at /docs, JSON at /docs-json. */
export function setupOpenApi(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('Chronicle scheduler API')
    .setDescription(
      'Jobs, runs, the worker protocol (lease, heartbeat, complete) and the dead-letter queue. Errors are RFC 9457 problem details.',
    )
    .setVersion('1')
    .addBearerAuth()
    .addSecurityRequirements('bearer')
    .build();
  SwaggerModule.setup('docs', app, () => SwaggerModule.createDocument(app, config));
}
