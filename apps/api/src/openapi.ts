import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type SchemaObject } from '@nestjs/swagger';
import { compiledBodySchemas } from './http/compiled-body';

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
  SwaggerModule.setup('docs', app, () => {
    const document = SwaggerModule.createDocument(app, config);
    // The compiled bodies' schemas, which their operations refer to by title: the very ones validated
    // (written in OpenAPI 3.0's dialect of JSON Schema, see body-schema.ts).
    const bodies = Object.fromEntries(compiledBodySchemas()) as Record<string, SchemaObject>;
    const schemas = { ...document.components?.schemas, ...bodies };
    return { ...document, components: { ...document.components, schemas } };
  });
}
