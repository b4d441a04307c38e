import { Catch, HttpException, HttpStatus, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DomainError, type DomainErrorCode } from '@chronicle/domain';
import { EventStoreError } from '@chronicle/event-store';
import { isUnavailable, sqlStateOf, SQLSTATE, type JsonLogger } from '@chronicle/platform';

/** RFC 9457 problem details; `type` is stable, clients branch on it. */
export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly instance?: string;
  readonly [extension: string]: unknown;
}

export const problemType = (slug: string): string => `/problems/${slug}`;

/** The stable name of a problem: its type's last segment (`not-found`), GraphQL's `extensions.code`. */
export const problemSlug = (problem: ProblemDetails): string => problem.type.slice(problem.type.lastIndexOf('/') + 1);

/** The HTTP status of each domain refusal: the only place codes meet HTTP. */
export const DOMAIN_STATUS: Record<DomainErrorCode, number> = {
  'validation-error': 400,
  'invalid-schedule': 400,
  unauthorized: 401,
  forbidden: 403,
  'not-found': 404,
  gone: 410,
  'stale-lease': 409,
  'invalid-transition': 409,
  'not-ready': 409,
  'concurrency-limit': 409,
  'duplicate-run': 409,
  conflict: 409,
  'payload-too-large': 413,
  'quota-exceeded': 429,
  'secret-in-payload': 400,
  'rate-limited': 429,
  'shard-unavailable': 503,
};

/** A domain refusal as problem details: one answer of a batch, or the whole response's. */
export function domainProblem(error: DomainError): ProblemDetails {
  return {
    ...error.details,
    type: problemType(error.code),
    title: error.code.replace(/-/g, ' '),
    status: DOMAIN_STATUS[error.code],
    detail: error.message,
  };
}

export const SLUG_BY_STATUS: Record<number, string> = {
  400: 'validation-error',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not-found',
  410: 'gone',
  405: 'method-not-allowed',
  406: 'not-acceptable',
  409: 'conflict',
  413: 'payload-too-large',
  415: 'unsupported-media-type',
  429: 'quota-exceeded',
  503: 'unavailable',
};

/**
 * The one place errors become responses. Domain refusals and the
 * framework's own errors keep their status and type; anything else is a 500
 * with no internals, logged with its stack.
 */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  constructor(private readonly logger: JsonLogger) {}

  catch(error: unknown, host: ArgumentsHost): void {
    // A GraphQL resolver's error is not a response of its own: it goes on to the GraphQL server, whose
    // formatError (graphql/graphql-errors.ts) shows it through problemOf, as a field's error.
    if (host.getType() !== 'http') throw error;
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const problem: ProblemDetails = { ...problemOf(error), instance: request.originalUrl };
    if (problem.status >= 500)
      this.logger.error('request failed', {
        method: request.method,
        path: request.path,
        err: error,
      });
    // 503: the database is away; 429: a quota says when (retryAfterSeconds).
    const retryAfter = problem.status === 503 ? 1 : problem['retryAfterSeconds'];
    if (typeof retryAfter === 'number') response.setHeader('Retry-After', String(retryAfter));
    response.status(problem.status).type('application/problem+json').send(JSON.stringify(problem));
  }
}

/**
 * Any error as the problem a client is shown, REST's and GraphQL's alike: domain refusals and the
 * framework's own errors keep their status and type; anything else is a 500 with no internals.
 */
export function problemOf(error: unknown): ProblemDetails {
  if (error instanceof DomainError) return domainProblem(error);
  if (error instanceof EventStoreError) {
    // A conflict left after the bounded retries, or the store being away.
    const [status, slug] =
      error.code === 'event-store-unavailable'
        ? [503, 'unavailable']
        : error.code === 'invalid-append'
          ? [400, 'validation-error']
          : [409, 'conflict'];
    return { type: problemType(slug), title: slug.replace(/-/g, ' '), status, detail: error.message };
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const body = error.getResponse();
    const message =
      typeof body === 'object' && body !== null && 'message' in body
        ? (body as { message: unknown }).message
        : error.message;
    const detail = Array.isArray(message) ? message.join('; ') : String(message);
    return {
      type: problemType(SLUG_BY_STATUS[status] ?? 'http-error'),
      title: HttpStatus[status]?.toString().replace(/_/g, ' ').toLowerCase() ?? 'error',
      status,
      detail,
    };
  }
  // body-parser's errors: malformed JSON, oversized bodies, bad charsets.
  const parserError = error as { type?: unknown; status?: unknown; message?: unknown };
  if (typeof parserError.status === 'number' && parserError.status >= 400 && parserError.status < 500) {
    const status = parserError.status;
    const detail =
      parserError.type === 'entity.parse.failed' ? 'request body is not valid JSON' : String(parserError.message);
    return { type: problemType(SLUG_BY_STATUS[status] ?? 'http-error'), title: 'bad request', status, detail };
  }
  // A NUL in a name, an id or a filter, looked up as it was given: PostgreSQL's text cannot hold one, and
  // only a request brings one. Where it would be stored, the event store refuses it first (invalid-append).
  if (sqlStateOf(error) === SQLSTATE.characterNotInRepertoire) {
    return {
      type: problemType('validation-error'),
      title: 'validation error',
      status: 400,
      detail: 'the request holds a NUL character (U+0000), which no name, id or text here can hold',
    };
  }
  // A write of a run of a shard moving to another server, from a path that did not name the server.
  if (sqlStateOf(error) === SQLSTATE.shardMoving) {
    return {
      type: problemType('shard-unavailable'),
      title: 'shard unavailable',
      status: 503,
      detail: 'the run is on a shard moving to another server; retry in a second',
    };
  }
  if (isUnavailable(error)) {
    return {
      type: problemType('unavailable'),
      title: 'unavailable',
      status: 503,
      detail: 'the database is not reachable right now; retry shortly',
    };
  }
  return {
    type: problemType('internal-error'),
    title: 'internal error',
    status: 500,
    detail: 'the server could not complete the request; it has been logged',
  };
}
