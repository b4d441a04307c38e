import { BadRequestException, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { ApiBody, getSchemaPath } from '@nestjs/swagger';
import Ajv, { type ErrorObject } from 'ajv';
import { isISO8601 } from 'class-validator';
import type { Request } from 'express';
import type { Accepted, Schema } from './body-schema';

/**
 * The validator of the hot endpoints' bodies: JSON Schema compiled once into plain JavaScript, where the
 * global ValidationPipe built a class instance per nested object and validated it by reflection.
 * Nothing is coerced, defaulted or removed: a body is taken as sent, or refused.
 */
const ajv = new Ajv({
  allErrors: false, // the first violation is the answer: a 1,000-item batch of garbage costs one message
  coerceTypes: false,
  removeAdditional: false,
  useDefaults: false,
  unicodeRegExp: false, // patterns run as the domain's RegExp objects do, without the `u` flag
  messages: false, // the refusal is written below, in the words the ValidationPipe used
  verbose: true, // errors carry the schema they broke, for those words
  strict: true,
  formats: {
    // The rule of class-validator's @IsISO8601({ strict: true, strictSeparator: true }), which enqueues used.
    iso8601: (value: string) => isISO8601(value, { strict: true, strictSeparator: true }),
  },
});

const FORMAT_NOUNS: Record<string, string> = { iso8601: 'a valid ISO 8601 date string' };
const TYPE_NOUNS: Record<string, string> = {
  integer: 'an integer number',
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
 * problem-details filter like the ValidationPipe's. The parameter is a custom one, which the global
 * ValidationPipe leaves alone (its `validateCustomDecorators` is off): the body is validated once. The
 * schema, by its title, is the body of the operation in the OpenAPI document.
 */
export function CompiledBody(schema: Schema<unknown>): ParameterDecorator {
  const title = schema['title'];
  if (typeof title !== 'string') throw new Error('a compiled body schema needs a title, its name in the document');
  if (documented.has(title) && documented.get(title) !== schema) throw new Error(`two body schemas are ${title}`);
  documented.set(title, schema);
  const check = compileBody(schema);
  const document: ParameterDecorator = (target, key) => {
    if (key === undefined) return;
    ApiBody({ schema: { $ref: getSchemaPath(title) }, required: true })(
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

/** The compiled check of a body: the body as it came, or a BadRequestException with the first violation. */
export function compileBody<S extends Schema<unknown>>(schema: S): (body: unknown) => Accepted<S> {
  const validate = ajv.compile(schema);
  return (body) => {
    // No body at all reads as `{}`, as the ValidationPipe took it.
    const value = body ?? {};
    if (!validate(value)) throw new BadRequestException([refusal(validate.errors![0]!)]);
    return value as Accepted<S>;
  };
}

/** One violation in the ValidationPipe's words, with the path of the field (`runs.3.job must be a job name`). */
function refusal(error: ErrorObject): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const subject = path === '' ? 'the body' : path;
  const schema = error.parentSchema as Record<string, unknown>;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return `${path === '' ? '' : `${path}.`}property ${String(params['additionalProperty'])} should not exist`;
    case 'required': {
      const field = String(params['missingProperty']);
      const properties = schema['properties'] as Record<string, Record<string, unknown>>;
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
    case 'minItems':
      return params['limit'] === 1
        ? `${subject} should not be empty`
        : `${subject} must contain at least ${String(params['limit'])} elements`;
    case 'maxItems':
      return `${subject} must contain no more than ${String(params['limit'])} elements`;
    case 'maxLength':
      return `${subject} must be shorter than or equal to ${String(params['limit'])} characters`;
    default:
      return `${subject} is not valid (${error.keyword})`;
  }
}

/** What a schema asks for, as the object of "must be". */
function expected(schema: Record<string, unknown>): string {
  const values = schema['enum'];
  if (Array.isArray(values)) return `one of the following values: ${values.filter((v) => v !== null).join(', ')}`;
  if (typeof schema['pattern'] === 'string' && typeof schema['description'] === 'string') return schema['description'];
  if (typeof schema['format'] === 'string') return FORMAT_NOUNS[schema['format']] ?? `a ${schema['format']} string`;
  return TYPE_NOUNS[String(schema['type'])] ?? 'a value';
}
