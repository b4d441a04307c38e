import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { JsonLogger } from '@chronicle/platform';
import { problemOf, problemSlug, type ProblemDetails } from '../http/problem-details.filter';

/**
 * Apollo's codes for a request GraphQL refused before running it: not valid GraphQL, not valid against
 * the schema, variables of the wrong type, a malformed HTTP request. Each is a `validation-error`.
 */
const REFUSED_REQUEST_CODES: ReadonlySet<unknown> = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
]);

/** What a refusal tells beyond its message, as REST's problem details carry it. */
const PROBLEM_EXTENSIONS = ['field', 'quota', 'retryAfterSeconds', 'runId'] as const;
/** What a query over the limits tells (query-limits.ts). */
const LIMIT_EXTENSIONS = ['limit', 'max', 'actual'] as const;

/**
 * Every error of a GraphQL answer, in one place: `extensions.code` is the REST problem type's last
 * segment (`not-found` for `/problems/not-found`) and `extensions.status` its HTTP status, found by the
 * function REST's filter uses (problemOf); a request GraphQL refused (syntax, schema, variables, limits)
 * is a `validation-error`. Messages are the problem's detail: never a stack trace or an internal error's
 * text (those are logged, the client gets `internal-error`).
 */
export function graphqlErrorFormatter(
  logger: JsonLogger,
  options: { readonly introspection: boolean },
): (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError {
  return (formatted, error) => {
    const extensions = formatted.extensions ?? {};
    const problem =
      REFUSED_REQUEST_CODES.has(extensions['code']) || extensions['limit'] !== undefined
        ? refusedRequest(formatted.message, options.introspection)
        : problemOf(causeOf(error));
    if (problem.status >= 500)
      logger.error('graphql request failed', {
        path: formatted.path?.join('.'),
        err: causeOf(error),
      });
    const shown: Record<string, unknown> = { code: problemSlug(problem), status: problem.status };
    for (const key of PROBLEM_EXTENSIONS) if (problem[key] !== undefined) shown[key] = problem[key];
    for (const key of LIMIT_EXTENSIONS) if (extensions[key] !== undefined) shown[key] = extensions[key];
    return {
      message: problem.detail,
      ...(formatted.locations === undefined ? {} : { locations: formatted.locations }),
      ...(formatted.path === undefined ? {} : { path: formatted.path }),
      extensions: shown,
    };
  };
}

/** The error a resolver (or the context) threw, out of GraphQL's wrapping. */
function causeOf(error: unknown): unknown {
  return error instanceof GraphQLError && error.originalError !== undefined ? error.originalError : error;
}

function refusedRequest(message: string, introspection: boolean): ProblemDetails {
  let detail = message;
  if (message.startsWith('GraphQL introspection is not allowed'))
    detail = 'introspection is turned off on this server (GRAPHQL_INTROSPECTION=false)';
  // "Did you mean ...?" would tell the schema that introspection keeps to itself.
  else if (!introspection) detail = message.replace(/ Did you mean .*\?$/, '');
  return { type: '/problems/validation-error', title: 'validation error', status: 400, detail };
}
