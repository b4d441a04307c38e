import { BadRequestException, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { ApiBody, ApiQuery, getSchemaPath, type ExamplesObject, type SchemaObject } from '@nestjs/swagger';
import Ajv, { type ErrorObject } from 'ajv';
import type { Request } from 'express';
import { RULE, type Accepted, type Schema } from './body-schema';
import { isInstant } from './instants';

/**
 * The one validator of what a request carries, its body and its query string (GraphQL's arguments too,
 * beside GraphQL's own type checks): JSON Schema compiled once into plain JavaScript, where a global
 * ValidationPipe built a class instance per nested object and validated it by reflection. Nothing is
 * coerced, defaulted or removed: a body is taken as sent, or refused.
 */
const ajv = new Ajv({
  allErrors: false, // the first violation is the answer: a 1,000-item batch of garbage costs one message
  coerceTypes: false,
  removeAdditional: false,
  useDefaults: false,
  unicodeRegExp: false, // patterns run as the domain's RegExp objects do, without the `u` flag
  messages: false, // the refusal is written below (refusal), in the words the API's answers have always used
  verbose: true, // errors carry the schema they broke, for those words
  strict: true,
  formats: {
    // The API's one rule for instants (instants.ts); the document says date-time, as it always did.
    iso8601: isInstant,
    'date-time': isInstant,
  },
});
// OpenAPI 3.0's example of a field: for the document, nothing to check.
ajv.addKeyword('example');

const FORMAT_NOUNS: Record<string, string> = {
  iso8601: 'a valid ISO 8601 date string',
  'date-time': 'a valid ISO 8601 date string',
};
const TYPE_NOUNS: Record<string, string> = {
  integer: 'an integer number',
  number: 'a number',
  string: 'a string',
  boolean: 'a boolean value',
  array: 'an array',
  object: 'an object',
};

const documented = new Map<string, Schema<unknown>>();

/** The schemas of the compiled bodies by title, for the OpenAPI document's components. */
export function compiledBodySchemas(): ReadonlyMap<string, Schema<unknown>> {
  return documented;
}

/**
 * The request body, validated against a schema compiled when the controller is loaded; a violation is a
 * 400 naming the field's path (`completions.3.fencingToken must not be less than 0`), rendered by the
 * problem-details filter. The schema, by its title, is the body of the operation in the OpenAPI document,
 * with the examples given.
 */
export function CompiledBody(schema: Schema<unknown>, options: { examples?: ExamplesObject } = {}): ParameterDecorator {
  const title = schema['title'];
  if (typeof title !== 'string') throw new Error('a compiled body schema needs a title, its name in the document');
  if (documented.has(title) && documented.get(title) !== schema) throw new Error(`two body schemas are ${title}`);
  documented.set(title, schema);
  const check = compileBody(schema);
  const document: ParameterDecorator = (target, key) => {
    if (key === undefined) return;
    ApiBody({ schema: { $ref: getSchemaPath(title) }, required: true, ...options })(
      target,
      key,
      Object.getOwnPropertyDescriptor(target, key)!,
    );
  };
  return createParamDecorator(
    (_: unknown, context: ExecutionContext) => check(context.switchToHttp().getRequest<Request>().body),
    [document],
  )();
}

/**
 * The query string's parameters, validated against a schema (body-schema.ts's `queryString`) compiled
 * when the controller is loaded, refused as a body is (`limit must not be greater than 500`, `property
 * color should not exist`). Each parameter is one of the operation's in the OpenAPI document.
 */
export function CompiledQuery(schema: Schema<unknown>): ParameterDecorator {
  const check = compileQuery(schema);
  const document: ParameterDecorator = (target, key) => {
    if (key === undefined) return;
    const method = Object.getOwnPropertyDescriptor(target, key)!;
    for (const [name, parameter] of Object.entries(propertiesOf(schema))) {
      const { description, ...rest } = parameter;
      ApiQuery({
        name,
        required: false,
        ...(typeof description === 'string' ? { description } : {}),
        schema: rest as SchemaObject,
      })(target, key, method);
    }
  };
  return createParamDecorator(
    (_: unknown, context: ExecutionContext) => check(context.switchToHttp().getRequest<Request>().query),
    [document],
  )();
}

/**
 * The compiled check of a body: the body as it came, or a BadRequestException with the first violation.
 * `root` names the value itself in a refusal (`the body must be an object`).
 */
export function compileBody<S extends Schema<unknown>>(schema: S, root = 'the body'): (body: unknown) => Accepted<S> {
  const validate = ajv.compile(compilable(schema));
  return (body) => {
    // No body at all reads as `{}` (as it did when a ValidationPipe checked bodies).
    const value = body ?? {};
    if (!validate(value)) throw new BadRequestException([refusal(validate.errors![0]!, root)]);
    return value as Accepted<S>;
  };
}

/**
 * The compiled check of a query string: its parameters, a number's read from its text first (`Number`,
 * as class-transformer read them: `limit=abc` is NaN, not an integer), the rest as sent (a repeated
 * parameter is a list, not a string).
 */
export function compileQuery<S extends Schema<unknown>>(schema: S): (query: unknown) => Accepted<S> {
  const check = compileBody(schema, 'the query');
  const numbers = Object.entries(propertiesOf(schema))
    .filter(([, parameter]) => parameter['type'] === 'integer' || parameter['type'] === 'number')
    .map(([name]) => name);
  return (query) => {
    const parameters: Record<string, unknown> = { ...(query as Record<string, unknown> | undefined) };
    for (const name of numbers) {
      const text = parameters[name];
      if (typeof text === 'string') parameters[name] = Number(text);
    }
    return check(parameters);
  };
}

function propertiesOf(schema: Schema<unknown>): Record<string, Schema<unknown>> {
  const properties = schema['properties'];
  if (schema['type'] !== 'object' || typeof properties !== 'object' || properties === null)
    throw new Error('a query string schema is an object of its parameters');
  return properties as Record<string, Schema<unknown>>;
}

/**
 * A schema as ajv compiles it, from the document's dialect (OpenAPI 3.0): `allOf: [{ $ref }]` beside a
 * field's own keywords documents a shape another check holds the field to (named-schemas.ts's
 * documentedAs), so the compiled check leaves it out; a boolean `exclusiveMinimum` (or `Maximum`) beside
 * `minimum` is JSON Schema's number. Any other reference is refused: a compiled schema says it all inline.
 */
function compilable(schema: Schema<unknown>): Schema<unknown> {
  if ('$ref' in schema) throw new Error(`a compiled schema cannot refer to ${String(schema['$ref'])}: inline it`);
  const copy: Record<string | symbol, unknown> = { ...schema };
  const allOf = copy['allOf'];
  if (Array.isArray(allOf) && allOf.every((part) => Object.keys(part as object).join() === '$ref'))
    delete copy['allOf'];
  const each = (value: unknown): unknown =>
    Array.isArray(value) ? value.map((s: Schema<unknown>) => compilable(s)) : compilable(value as Schema<unknown>);
  for (const key of ['items', 'not', 'additionalProperties', 'oneOf', 'anyOf', 'allOf'])
    if (typeof copy[key] === 'object' && copy[key] !== null) copy[key] = each(copy[key]);
  if (typeof copy['properties'] === 'object' && copy['properties'] !== null)
    copy['properties'] = Object.fromEntries(
      Object.entries(copy['properties']).map(([name, field]) => [name, compilable(field as Schema<unknown>)]),
    );
  for (const [exclusive, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (copy[exclusive] !== true) continue;
    copy[exclusive] = copy[bound];
    delete copy[bound];
  }
  return copy;
}

/** One violation in the API's words, with the path of the field (`runs.3.job must be a job name`). */
function refusal(error: ErrorObject, root: string): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const subject = path === '' ? root : path;
  const schema = error.parentSchema as Record<string | symbol, unknown>;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return `${path === '' ? '' : `${path}.`}property ${String(params['additionalProperty'])} should not exist`;
    case 'required': {
      const field = String(params['missingProperty']);
      const properties = schema['properties'] as Record<string, Record<string | symbol, unknown>>;
      return `${path === '' ? field : `${path}.${field}`} must be ${expected(properties[field] ?? {})}`;
    }
    case 'type':
    case 'enum':
    case 'pattern':
    case 'format':
      return `${subject} must be ${expected(schema)}`;
    case 'minimum':
      return `${subject} must not be less than ${String(params['limit'])}`;
    case 'maximum':
      return `${subject} must not be greater than ${String(params['limit'])}`;
    case 'exclusiveMinimum':
      return params['limit'] === 0
        ? `${subject} must be a positive number`
        : `${subject} must be greater than ${String(params['limit'])}`;
    case 'exclusiveMaximum':
      return `${subject} must be less than ${String(params['limit'])}`;
    case 'minItems':
      return params['limit'] === 1
        ? `${subject} should not be empty`
        : `${subject} must contain at least ${String(params['limit'])} elements`;
    case 'maxItems':
      return `${subject} must contain no more than ${String(params['limit'])} elements`;
    case 'minLength':
      return `${subject} must be longer than or equal to ${String(params['limit'])} characters`;
    case 'maxLength':
      return `${subject} must be shorter than or equal to ${String(params['limit'])} characters`;
    default:
      return `${subject} is not valid (${error.keyword})`;
  }
}

/** What a schema asks for, as the object of "must be". */
function expected(schema: Record<string | symbol, unknown>): string {
  const values = schema['enum'];
  if (Array.isArray(values)) return `one of the following values: ${values.filter((v) => v !== null).join(', ')}`;
  const rule = schema[RULE];
  if (typeof rule === 'string') return rule;
  if (typeof schema['format'] === 'string') return FORMAT_NOUNS[schema['format']] ?? `a ${schema['format']} string`;
  return TYPE_NOUNS[String(schema['type'])] ?? 'a value';
}
