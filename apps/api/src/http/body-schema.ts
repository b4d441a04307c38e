/*
 * Request bodies and query strings as JSON Schema, written once: `CompiledBody` and `CompiledQuery`
 * (compiled-body.ts) compile each into a validator and serve it in the OpenAPI document, and
 * `Accepted<typeof S>` is the TypeScript type of what it lets through. The schemas are OpenAPI 3.0's
 * dialect of JSON Schema (`nullable`, a boolean `exclusiveMinimum`), which compiled-body.ts gives ajv. The
 * answers' schemas (http/answers.ts) are built from the same pieces, with `shape` for their objects.
 */

declare const ACCEPTS: unique symbol;

/** A JSON Schema that accepts values of type T (the type is carried for the compiler only). */
export type Schema<T> = { readonly [keyword: string]: unknown } & { readonly [ACCEPTS]?: T };

/** What a schema lets through. */
export type Accepted<S> = S extends Schema<infer T> ? T : never;

/** The fields of an object, by name. */
export type Fields = Record<string, Schema<unknown>>;

type ObjectOf<R extends Fields, O extends Fields> = { -readonly [K in keyof R]: Accepted<R[K]> } & {
  -readonly [K in keyof O]?: Accepted<O[K]> | null;
};

/**
 * What a pattern stands for (`a run id`), kept beside the schema for the refusal to say ("must be a run
 * id") however the field is described: a symbol, which the document (JSON) leaves out.
 */
export const RULE: unique symbol = Symbol('rule');

/** Whole numbers from minimum to maximum (inclusive). */
export function integer(minimum: number, maximum?: number): Schema<number> {
  return { type: 'integer', minimum, ...(maximum === undefined ? {} : { maximum }) };
}

/** Numbers more than `above` (OpenAPI 3.0's boolean exclusiveMinimum), up to maximum (inclusive). */
export function numberAbove(above: number, maximum: number): Schema<number> {
  return { type: 'number', minimum: above, exclusiveMinimum: true, maximum };
}

/**
 * A string. A pattern comes with the rule it stands for (`a run id`): the refusal says that the value
 * "must be <rule>", and the document shows it as the description unless the field is described otherwise.
 */
export function text(
  rules: { minLength?: number; maxLength?: number; pattern?: RegExp; rule?: string; format?: string } = {},
): Schema<string> {
  const { pattern, rule, ...rest } = rules;
  return {
    type: 'string',
    ...rest,
    ...(pattern === undefined ? {} : { pattern: pattern.source }),
    ...(rule === undefined ? {} : { description: rule, [RULE]: rule }),
  };
}

export function boolean(): Schema<boolean> {
  return { type: 'boolean' };
}

/** One of a few strings. */
export function oneOf<const V extends string>(values: readonly V[]): Schema<V> {
  return { type: 'string', enum: values };
}

/** Any JSON value, null included: a payload the scheduler carries without looking at it. */
export function anyValue(): Schema<unknown> {
  return {};
}

/** An object, whatever its fields: another check holds them to its rules. */
export function anyObject(): Schema<Record<string, unknown>> {
  return { type: 'object' };
}

export function array<T>(items: Schema<T>, size: { minItems?: number; maxItems: number }): Schema<T[]> {
  return { type: 'array', items, ...size };
}

/**
 * An object with exactly these fields: any other is refused. An optional field may be absent or null,
 * both meaning "not given", as class-validator's `@IsOptional()` took them before (`nullable`, which
 * ajv applies to the field's `type`; a schema without one accepts null already).
 */
export function object<R extends Fields, O extends Fields = Record<never, never>>(
  fields: { required: R; optional?: O },
  title?: string,
): Schema<ObjectOf<R, O>> {
  const optional = Object.entries(fields.optional ?? {}).map(([name, schema]) => [name, nullable(schema)]);
  return {
    ...(title === undefined ? {} : { title }),
    type: 'object',
    properties: { ...fields.required, ...Object.fromEntries(optional) },
    ...(Object.keys(fields.required).length === 0 ? {} : { required: Object.keys(fields.required) }),
    additionalProperties: false,
  };
}

/** The schema, accepting null too (OpenAPI 3.0's `nullable`; an enum lists null itself, as 3.0.3 asks). */
export function nullable<T>(schema: Schema<T>): Schema<T | null> {
  // OpenAPI 3.0 ignores what stands beside a $ref: a nullable named schema cannot be said, write it inline.
  if ('$ref' in schema) throw new Error(`${String(schema['$ref'])} cannot be made nullable: inline its schema`);
  if (!('type' in schema)) return schema;
  const values = schema['enum'];
  return { ...schema, nullable: true, ...(Array.isArray(values) ? { enum: [...values, null] } : {}) };
}

/**
 * A query string's parameters, each optional, any other refused. Each is a string as sent, but for a
 * number (`integer`, `numberAbove`), which is checked as the number its text reads (`Number(text)`).
 */
export function queryString<O extends Fields>(
  fields: O,
  title?: string,
): Schema<{ -readonly [K in keyof O]?: Accepted<O[K]> }> {
  return {
    ...(title === undefined ? {} : { title }),
    type: 'object',
    properties: fields,
    additionalProperties: false,
  };
}

/**
 * An object the API answers with: the `required` fields are always there, the `optional` ones only
 * sometimes. Nothing is said of other fields: a client ignores those it does not know, so the API may
 * add some later.
 */
export function shape<R extends Fields, O extends Fields = Record<never, never>>(
  fields: { required: R; optional?: O },
  title?: string,
): Schema<{ -readonly [K in keyof R]: Accepted<R[K]> } & { -readonly [K in keyof O]?: Accepted<O[K]> }> {
  return {
    ...(title === undefined ? {} : { title }),
    type: 'object',
    properties: { ...fields.required, ...fields.optional },
    ...(Object.keys(fields.required).length === 0 ? {} : { required: Object.keys(fields.required) }),
  };
}

/** The items of an answer: as many as there are (a request's arrays are bounded, see `array`). */
export function list<T>(items: Schema<T>): Schema<T[]> {
  return { type: 'array', items };
}

/** Exactly one of these schemas (each an object the others refuse). */
export function union<S extends ReadonlyArray<Schema<unknown>>>(...schemas: S): Schema<Accepted<S[number]>> {
  return { oneOf: schemas };
}

/** An instant as RFC 3339 text in UTC (`2026-03-15T01:02:30Z`). */
export function dateTime(): Schema<string> {
  return text({ format: 'date-time' });
}
