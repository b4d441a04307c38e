import { applyDecorators } from '@nestjs/common';
import { ApiResponse, type ResponseObject, type SchemaObject } from '@nestjs/swagger';
import type { DomainErrorCode } from '@chronicle/domain';
import { ref } from './named-schemas';
import { integer, shape, text, type Schema } from './body-schema';
import { DOMAIN_STATUS, problemType, SLUG_BY_STATUS } from './problem-details.filter';

/*
 * The refusals of each operation in the OpenAPI document: RFC 9457 problem details
 * (application/problem+json), one response per status, listing the problem types it may carry as an
 * enum of `type`, so a generated client can tell them apart.
 */

/** The problem types the filter sends: the domain's codes, and the two it makes of other errors. */
export type ProblemSlug = DomainErrorCode | 'unavailable' | 'internal-error';

const PROBLEM_STATUS: Record<ProblemSlug, number> = { ...DOMAIN_STATUS, unavailable: 503, 'internal-error': 500 };

const MEANING: Record<ProblemSlug, string> = {
  'validation-error': 'a field, parameter or the body is not valid (`field` names it when it can)',
  'invalid-schedule': 'the schedule or the range asked for is not valid (`field` names the part)',
  unauthorized: 'no `Authorization: Bearer <token>`, or not a token this API issued',
  forbidden: 'the token may not do this: an admin, team or worker call made with another kind, or a queue not granted',
  'not-found': "no such team, job or run, or it is another team's",
  gone: 'the run finished longer ago than retention keeps (`RETENTION_DAYS`) and its row is dropped; its id is known for a year',
  'stale-lease': "the fencing token is not the run's current lease (another worker has it, or it has ended)",
  'invalid-transition': 'the run is not in a state this action applies to',
  'not-ready': 'the run is not due yet',
  'concurrency-limit': "with `ifRunning: reject`, the run would have to wait for the job's concurrency limit",
  'duplicate-run':
    'with `ifDuplicate: reject`, a run of the job holds the unique key (`runId` names it); nothing was enqueued',
  conflict: 'the run or job moved on while this was decided; nothing was written, ask again',
  'payload-too-large': "the payload is over 256 KB, or the body over its endpoint's limit",
  'quota-exceeded': "over the team's enqueue quota (`quota` names it); nothing was enqueued, retry after `Retry-After`",
  'secret-in-payload':
    "a payload carries what looks like a credential (`field` names where, never the value): name the secret instead, or allow the path in the job's `secretsAllowed`",
  'rate-limited':
    'too many failed authentications with this token, or from this address (a valid token still passes); retry after `Retry-After`',
  'shard-unavailable':
    "the server the run's shard is kept on is not reachable (`server` and `shards` name it); the other shards' runs go on; retry after `Retry-After`",
  unavailable: 'the database is not reachable right now; retry after `Retry-After`',
  'internal-error': 'the server could not complete the request; it has been logged',
};

/** RFC 9457 problem details, with the members this API adds where they apply. */
export const Problem = shape(
  {
    required: {
      type: {
        ...text(),
        format: 'uri-reference',
        description: 'stable: clients branch on it',
        example: '/problems/not-found',
      },
      title: text(),
      status: integer(400, 599),
      detail: text(),
    },
    optional: {
      instance: { ...text(), description: 'the path of the request' },
      field: { ...text(), description: 'validation-error, invalid-schedule: the field at fault' },
      quota: { ...text(), description: 'quota-exceeded: the quota that refused' },
      retryAfterSeconds: { ...integer(1), description: 'quota-exceeded: when to ask again (also Retry-After)' },
      runId: { ...text(), description: 'duplicate-run: the run that holds the unique key' },
    },
  },
  'Problem',
);

/** A problem whose `type` is one of these. */
export function problemOfTypes(slugs: readonly ProblemSlug[]): Schema<unknown> {
  return {
    allOf: [
      ref(Problem),
      { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: slugs.map(problemType) } } },
    ],
  };
}

/** The response of one status for these problem types. */
export function problemResponse(slugs: readonly ProblemSlug[]): ResponseObject {
  const retryAfter = slugs.some((slug) => slug === 'quota-exceeded' || slug === 'unavailable');
  return {
    description: slugs.map((slug) => `\`${problemType(slug)}\`: ${MEANING[slug]}`).join('\n\n'),
    content: { 'application/problem+json': { schema: problemOfTypes(slugs) as SchemaObject } },
    ...(retryAfter
      ? {
          headers: {
            'Retry-After': {
              description: 'whole seconds to wait before asking again',
              schema: { type: 'integer', minimum: 1 },
            },
          },
        }
      : {}),
  };
}

/** The problem types a problem response lists (the enum problemOfTypes wrote). */
function slugsOf(response: ResponseObject | undefined): ProblemSlug[] {
  const schema = response?.content?.['application/problem+json']?.schema as SchemaObject | undefined;
  const typeSchema = (schema?.allOf?.[1] as SchemaObject | undefined)?.properties?.['type'] as SchemaObject | undefined;
  return ((typeSchema?.enum ?? []) as string[]).map((type) => type.slice('/problems/'.length) as ProblemSlug);
}

/**
 * The responses with these problems too, each in the response of its status beside those listed already.
 * A refusal documented without its problem (a bare `@ApiForbiddenResponse()`) becomes the problem the
 * filter sends for its status: every error leaves as problem details.
 */
export function withProblems(
  responses: Record<string, ResponseObject>,
  slugs: readonly ProblemSlug[],
): Record<string, ResponseObject> {
  const merged = { ...responses };
  const bare = Object.entries(responses)
    .filter(
      ([status, response]) => Number(status) >= 400 && response.content?.['application/problem+json'] === undefined,
    )
    .map(([status]) => SLUG_BY_STATUS[Number(status)] as ProblemSlug | undefined)
    .filter((slug) => slug !== undefined);
  for (const [status, group] of byStatus([...bare, ...slugs])) {
    const listed = slugsOf(merged[status]);
    merged[status] = problemResponse([...listed, ...group.filter((slug) => !listed.includes(slug))]);
  }
  return merged;
}

/**
 * An operation's own refusals (those of every /v1 call are added by openapi.ts); on a controller, those
 * of all its operations.
 */
export function ApiProblems(...slugs: ProblemSlug[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...[...byStatus(slugs)].map(([status, group]) =>
      ApiResponse({ status: Number(status), ...problemResponse(group) }),
    ),
  );
}

function byStatus(slugs: readonly ProblemSlug[]): Map<string, ProblemSlug[]> {
  const groups = new Map<string, ProblemSlug[]>();
  for (const slug of slugs) {
    const status = String(PROBLEM_STATUS[slug]);
    groups.set(status, [...(groups.get(status) ?? []), slug]);
  }
  return groups;
}
