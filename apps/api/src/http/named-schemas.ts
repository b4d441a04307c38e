import type { Schema } from './body-schema';

/*
 * The OpenAPI document's named schemas written as JSON Schema (built like the request bodies',
 * body-schema.ts): the answers, the problem details, and parts of requests that another check holds them to.
 * Each is a component of the document, referred to by `$ref`, so a generated client gets a named type
 * for it. The compiled bodies have their own (compiled-body.ts). Documentation only: nothing here runs
 * per request.
 */

const components = new Map<string, Schema<unknown>>();

/** The named schemas by title, for the document's components (openapi.ts). */
export function namedSchemas(): ReadonlyMap<string, Schema<unknown>> {
  return components;
}

/** A titled schema as a `$ref` to its component, registered under its title. */
export function ref<T>(schema: Schema<T>): Schema<T> {
  const title = schema['title'];
  if (typeof title !== 'string') throw new Error('a named schema needs a title, its name in the document');
  if (components.has(title) && components.get(title) !== schema) throw new Error(`two named schemas are ${title}`);
  components.set(title, schema);
  return { $ref: `#/components/schemas/${title}` };
}

/**
 * A field of a request that its compiled check holds to `checked` (an object, say), documented as the
 * named schema `documented` says (`allOf: [{ $ref }]`): a value that another check holds to that shape,
 * with its own refusal (a schedule, which the domain refuses as invalid-schedule), or any value named for
 * the document (Payload). The compiled check leaves the reference out (compiled-body.ts).
 */
export function documentedAs<T>(checked: Schema<T>, documented: Schema<unknown>, description?: string): Schema<T> {
  return { ...checked, allOf: [ref(documented)], ...(description === undefined ? {} : { description }) };
}
