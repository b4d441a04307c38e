import type { NextFunction, Request, Response } from 'express';
import { Histogram, type Registry } from 'prom-client';

/** Unmatched requests (404s of paths no route has) share one label value: a scanner cannot add series. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * chronicle_http_request_duration_seconds for every request of the process, labelled by the route's
 * template (`/v1/runs/:id`, never the URL with the run's id), read once the response is sent (a
 * client gone before its answer, a long-poll's for instance, is not counted: it got none).
 */
export function httpMetrics(registry: Registry): (request: Request, response: Response, next: NextFunction) => void {
  const duration = new Histogram({
    name: 'chronicle_http_request_duration_seconds',
    help: 'HTTP requests by method, route template and status, from the request to the last byte of the answer',
    labelNames: ['method', 'route', 'status'],
    // Long-polling leases wait up to 30 s: the top buckets see them.
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  return (request, response, next) => {
    const end = duration.startTimer();
    response.once('finish', () =>
      end({ method: request.method, route: routeOf(request), status: String(response.statusCode) }),
    );
    next();
  };
}

/**
 * The route template Express matched (the colon of a custom method unescaped); for what is mounted
 * rather than routed (Apollo's /graphql, Swagger UI's /docs: fixed paths, no parameters), the mount
 * path that answered.
 */
function routeOf(request: Request): string {
  const path: unknown = (request.route as { path?: unknown } | undefined)?.path;
  if (typeof path === 'string') return path.replace(/\\/g, '');
  return request.baseUrl === '' ? UNMATCHED_ROUTE : request.baseUrl;
}
