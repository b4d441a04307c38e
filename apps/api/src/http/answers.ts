import { ApiResponse, type SchemaObject } from '@nestjs/swagger';
import type { Schema } from './body-schema';
import { ref } from './named-schemas';

/**
 * A success answer of an operation in the OpenAPI document: its status, what it means, and its body, a
 * named schema (one type of a generated client), as JSON. Metadata only: nothing runs per request.
 */
export function ApiAnswer(
  status: number,
  schema: Schema<unknown>,
  options: { description: string; example?: unknown },
): MethodDecorator {
  const example = options.example === undefined ? {} : { example: options.example };
  return ApiResponse({
    status,
    description: options.description,
    content: { 'application/json': { schema: ref(schema) as SchemaObject, ...example } },
  });
}
