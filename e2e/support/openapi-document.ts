import Ajv, { type AnySchema, type ValidateFunction } from 'ajv';

/*
 * The OpenAPI document as a client sees it, for tests: its operations, and validators of its schemas
 * that hold the server to them. Objects are closed (a field the document does not name is refused), so
 * an answer cannot carry what a generated client would not know of. Problem details stay open (RFC 9457
 * extensions), and so do the parts of an allOf. Imports only ajv: the generated client's tests compile it.
 */

export interface MediaType {
  readonly schema?: unknown;
  readonly example?: unknown;
  readonly examples?: Record<string, { readonly value: unknown }>;
}

export interface Operation {
  readonly operationId?: string;
  readonly security?: Array<Record<string, string[]>>;
  readonly parameters?: Array<{ readonly name: string; readonly in: string; readonly schema?: unknown }>;
  readonly requestBody?: { readonly content: Record<string, MediaType> };
  readonly responses: Record<
    string,
    { readonly description: string; readonly content?: Record<string, MediaType>; readonly headers?: object }
  >;
}

export interface OpenApiDocument {
  readonly openapi: string;
  readonly security?: unknown;
  readonly paths: Record<string, Record<string, Operation>>;
  readonly components: {
    readonly schemas: Record<string, unknown>;
    readonly securitySchemes?: Record<string, unknown>;
  };
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Every operation of the document, with its method and path. */
export function operationsOf(document: OpenApiDocument): Array<{ method: string; path: string; operation: Operation }> {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    HTTP_METHODS.filter((method) => item[method] !== undefined).map((method) => ({
      method,
      path,
      operation: item[method]!,
    })),
  );
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const COMPONENTS = '#/components/schemas/';

/** Validators of the document's schemas: a list of what is wrong, empty when a value conforms. */
export function documentValidator(document: OpenApiDocument) {
  const ajv = new Ajv({
    strict: false, // OpenAPI's own keywords (example, discriminator, ...) beside JSON Schema's
    allErrors: true,
    formats: {
      'date-time': (value: string) => RFC3339.test(value) && !Number.isNaN(Date.parse(value)),
      'uri-reference': true,
      iso8601: true, // the request bodies' own format: the server checks it
    },
  });
  const schemas = Object.fromEntries(
    Object.entries(document.components.schemas).map(([name, schema]) => [
      name,
      name === 'Problem' ? schema : closed(schema),
    ]),
  );
  ajv.addSchema(absolute({ $id: 'openapi', components: { schemas } }) as AnySchema);
  const compiled = new Map<string, ValidateFunction>();
  const check = (schema: unknown, value: unknown): string[] => {
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (validate === undefined) {
      validate = ajv.compile(absolute(closed(schema)) as AnySchema);
      compiled.set(key, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map(
      (e) => `${e.instancePath || '(body)'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`,
    );
  };
  return {
    check,
    /** What is wrong with an answer of an operation, by the document: its status, media type and body. */
    checkResponse(method: string, path: string, status: number, contentType: string | null, body: unknown): string[] {
      const operation = document.paths[path]?.[method.toLowerCase()];
      if (operation === undefined) return [`${method} ${path} is not in the document`];
      const response = operation.responses[String(status)];
      if (response === undefined) return [`${method} ${path} does not document status ${status}`];
      const mediaType = (contentType ?? '').split(';')[0]!.trim();
      const documented = response.content?.[mediaType];
      if (documented === undefined) return [`${method} ${path} ${status} does not document ${mediaType || 'no body'}`];
      return check(documented.schema, body).map((e) => `${method} ${path} ${status}: ${e}`);
    },
  };
}

/** The schema with its objects closed (a field it does not name is refused), in JSON Schema's words. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (schema === null || typeof schema !== 'object') return schema;
  const object = schema as Record<string, unknown>;
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    if (key === 'allOf')
      result[key] = value; // each part sees the others' fields
    else if (key === 'properties')
      result[key] = Object.fromEntries(Object.entries(value as object).map(([name, s]) => [name, closed(s)]));
    else if (key === 'items' || key === 'oneOf' || key === 'anyOf') result[key] = closed(value);
    else result[key] = value;
  }
  if ('properties' in object && !('additionalProperties' in object)) result['additionalProperties'] = false;
  // OpenAPI 3.0's boolean exclusiveMinimum beside minimum (`more than 0`) is JSON Schema's number.
  if (object['exclusiveMinimum'] === true) {
    result['exclusiveMinimum'] = object['minimum'];
    delete result['minimum'];
  }
  return result;
}

/** `#/components/schemas/X` as a reference into the schema added as `openapi`. */
function absolute(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema).replaceAll(`"${COMPONENTS}`, `"openapi${COMPONENTS}`));
}
