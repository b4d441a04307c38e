import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { runInRequestContext, type JsonLogger } from '@chronicle/platform';

/**
 * A caller's X-Request-Id is kept when it is short and plain: no spaces,
 * quotes or control characters to forge a line or a header with.
 */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:/+=-]{1,64}$/;

/** Probes ask every few seconds: their access lines only at debug. */
const QUIET_ROUTES: ReadonlySet<string> = new Set(['/healthz']);

/**
 * First of the HTTP chain: the request's id (the caller's X-Request-Id, or
 * a new one), echoed in the response's X-Request-Id and carried by every
 * line logged while the request is handled (AsyncLocalStorage, read by the
 * logger). When the response is done, one access line: method, route
 * template, status, duration. Never the query string, headers or body:
 * tokens and payloads travel there.
 */
export function requestLogging(logger: JsonLogger) {
  const log = logger.child('http');
  return (request: Request, response: Response, next: NextFunction): void => {
    const header = request.headers['x-request-id'];
    const requestId = typeof header === 'string' && SANE_REQUEST_ID.test(header) ? header : randomUUID();
    response.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    let logged = false;
    const done = (): void => {
      if (logged) return;
      logged = true;
      const route = routeOf(request);
      if (!log.isLevelEnabled(QUIET_ROUTES.has(route) ? 'debug' : 'info')) return;
      const fields = {
        requestId,
        method: request.method,
        route,
        status: response.statusCode,
        durationMs: Math.round(Number(process.hrtime.bigint() - started) / 1e5) / 10,
        // Closed before the answer was sent: the caller went away (a long poll given up).
        ...(response.writableFinished ? {} : { aborted: true }),
      };
      if (QUIET_ROUTES.has(route)) log.debug('request', fields);
      else log.info('request', fields);
    };
    response.once('finish', done);
    response.once('close', done);
    runInRequestContext({ requestId }, next);
  };
}

/** The matched route's template (`/v1/runs/:id`), else the path without its query string. */
function routeOf(request: Request): string {
  const template = (request.route as { path?: unknown } | undefined)?.path;
  if (typeof template === 'string') return request.baseUrl + template;
  const url = request.originalUrl;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}
