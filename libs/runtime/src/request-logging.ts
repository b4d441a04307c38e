import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { SpanStatusCode } from '@opentelemetry/api';
import {
  runInRequestContext,
  serverSpan,
  traceContextOf,
  traceContextOfSpan,
  type JsonLogger,
} from '@chronicle/platform';

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
    // The request's span when this process traces (a child of the caller's traceparent); its events record
    // that span's context, or the caller's where this process makes no span (or one not sampled).
    const traced = serverSpan(request.method, request.headers);
    const trace =
      traced?.span.isRecording() === true
        ? traceContextOfSpan(traced.span.spanContext())
        : traceContextOf(request.headers['traceparent'], request.headers['tracestate']);
    let logged = false;
    const done = (): void => {
      if (logged) return;
      logged = true;
      const route = routeOf(request);
      if (traced !== undefined) {
        traced.span.updateName(`${request.method} ${route}`);
        traced.span.setAttributes({ 'http.route': route, 'http.response.status_code': response.statusCode });
        if (response.statusCode >= 500) traced.span.setStatus({ code: SpanStatusCode.ERROR });
        traced.span.end();
      }
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
    const context = trace === undefined ? { requestId } : { requestId, trace };
    if (traced === undefined) runInRequestContext(context, next);
    else traced.within(() => runInRequestContext(context, next));
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
