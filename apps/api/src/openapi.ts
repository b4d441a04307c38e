import type { INestApplication } from '@nestjs/common';
import {
  DocumentBuilder,
  SwaggerModule,
  type OpenAPIObject,
  type OperationObject,
  type PathItemObject,
  type ResponseObject,
  type SchemaObject,
} from '@nestjs/swagger';
import { integer, list, oneOf, shape, text } from './http/body-schema';
import { compiledBodySchemas } from './http/compiled-body';
import { namedSchemas, ref } from './http/named-schemas';
import { withProblems, type ProblemSlug } from './http/problem-responses';

/**
 * Every /v1 call passes the AuthGuard (401) and may meet the server's failures. Which calls are for one
 * kind of caller only (403) their controllers say.
 */
const EVERY_CALL: ProblemSlug[] = ['unauthorized', 'internal-error', 'unavailable'];
/** Every call with a JSON body: it may not parse (400), or be over its endpoint's limit (413, http/body-limits.ts). */
const EVERY_BODY: ProblemSlug[] = ['validation-error', 'payload-too-large'];

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * Served, but not an API call: GET /metrics (libs/runtime's MetricsController) is Prometheus's text
 * format for Prometheus to scrape (docs/operations.md, "Metrics"), not JSON for a generated client.
 */
const UNDOCUMENTED = new Set(['/metrics']);

const CHECK = {
  required: { status: oneOf(['up', 'down']) },
  optional: { error: { ...text(), description: 'down: why' } },
};

/** GET /healthz (libs/runtime's HealthController): served by every process, without a token. */
const Health = shape(
  {
    required: {
      status: {
        ...oneOf(['ok', 'degraded', 'unavailable']),
        description: 'degraded: a canary missed, or a server runs are kept on does not answer; still serving',
      },
      checks: shape({
        required: {
          eventStore: shape({ ...CHECK, required: { ...CHECK.required, kind: { ...text(), example: 'postgres' } } }),
          readModels: shape(CHECK),
          canaries: shape({
            required: { status: oneOf(['up', 'degraded', 'unknown', 'off']) },
            optional: {
              shards: { ...list(integer(0)), description: 'degraded: the shards whose canary missed twice in a row' },
              error: { ...text(), description: 'unknown: why' },
            },
          }),
        },
        optional: {
          runServers: {
            ...list(
              shape(
                {
                  ...CHECK,
                  required: { ...CHECK.required, server: text(), shards: list(integer(0)) },
                },
                'RunServerCheck',
              ),
            ),
            description: 'with runs on several servers (docs/sharding.md): each server but the control database',
          },
        },
      }),
    },
  },
  'Health',
);
const HEALTH = ref(Health) as SchemaObject;

/**
 * The OpenAPI document of /v1, generated from the controllers' decorators: the UI at /docs, JSON at
 * /docs-json. Built once, at the first request for it.
 */
export function setupOpenApi(app: INestApplication): void {
  SwaggerModule.setup('docs', app, () => openApiDocument(app));
}

function openApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Chronicle scheduler API')
    .setDescription(
      'Jobs, runs, the worker protocol (lease, heartbeat, complete) and the dead-letter queue. Every /v1 call ' +
        'takes `Authorization: Bearer <token>`: the admin token, or a team or worker token the admin issued. ' +
        'Errors are RFC 9457 problem details (application/problem+json) whose `type` is stable. Custom methods ' +
        '(`/v1/jobs/{name}:pause`, ...) are paths of their own: the colon is part of the path.',
    )
    .setVersion('1')
    .addSecurity('bearer', { type: 'http', scheme: 'bearer', description: 'an admin, team or worker token' })
    .build();
  const document = SwaggerModule.createDocument(app, config);
  // The compiled bodies' schemas, which their operations refer to by title: the very ones validated
  // (written in OpenAPI 3.0's dialect of JSON Schema, see body-schema.ts); then the answers' and problems'.
  const named = { ...Object.fromEntries(compiledBodySchemas()), ...Object.fromEntries(namedSchemas()) };
  const schemas = { ...document.components?.schemas, ...(named as Record<string, SchemaObject>) };
  const paths = Object.fromEntries(
    Object.entries(document.paths)
      .filter(([path]) => !UNDOCUMENTED.has(path))
      .map(([path, item]) => [path, documentedPath(path, item)]),
  );
  return { ...document, paths, components: { ...document.components, schemas } };
}

/**
 * What holds for every operation of a path: the /v1 calls' token (asked per operation, not for the whole
 * document, as /healthz takes none) and refusals; /healthz's answers.
 */
function documentedPath(path: string, item: PathItemObject): PathItemObject {
  if (path === '/healthz') return { ...item, get: health(item.get!) };
  if (!path.startsWith('/v1/')) return item;
  const documented: PathItemObject = { ...item };
  for (const method of METHODS) {
    const operation = item[method];
    if (operation === undefined) continue;
    const responses = operation.responses as Record<string, ResponseObject>;
    documented[method] = {
      ...operation,
      security: [{ bearer: [] }],
      responses: withProblems(responses, [...EVERY_CALL, ...(operation.requestBody === undefined ? [] : EVERY_BODY)]),
    };
  }
  return documented;
}

function health(operation: OperationObject): OperationObject {
  const body = { 'application/json': { schema: HEALTH } };
  return {
    ...operation,
    operationId: 'getHealth',
    summary: 'Liveness and readiness: the event store and the read-model database answer within 2 s (no token)',
    responses: {
      '200': { description: 'both answer', content: body },
      '503': { description: 'one does not: its check says why', content: body },
    },
  };
}
