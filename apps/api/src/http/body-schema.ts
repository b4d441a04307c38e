/*
 * Request bodies as JSON Schema, written once: `CompiledBody` compiles each into a validator and serves it
 * in the OpenAPI document, and `Accepted<typeof S>` is the TypeScript type of what it lets through. The
 * schemas are OpenAPI 3.0's dialect of JSON Schema (`nullable`), which ajv reads as it is.
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

/** Whole numbers from minimum to maximum (inclusive). */
export function integer(minimum: number, maximum?: number): Schema<number> {
  return { type: 'integer', minimum, ...(maximum === undefined ? {} : { maximum }) };
}

/**
 * A string. A pattern comes with the rule it stands for (`a run id`): the refusal says that the value
 * "must be <rule>", and the document shows it as the description.
 */
export function text(
  rules: { maxLength?: number; pattern?: RegExp; rule?: string; format?: string } = {},
): Schema<string> {
  const { pattern, rule, ...rest } = rules;
  return {
    type: 'string',
    ...rest,
    ...(pattern === undefined ? {} : { pattern: pattern.source }),
    ...(rule === undefined ? {} : { description: rule }),
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
function nullable(schema: Schema<unknown>): Schema<unknown> {
  if (!('type' in schema)) return schema;
  const values = schema['enum'];
  return { ...schema, nullable: true, ...(Array.isArray(values) ? { enum: [...values, null] } : {}) };
}
