import { json, type NextFunction, type Request, type Response } from 'express';
import { MAX_PAYLOAD_BYTES } from '@chronicle/domain';
import { refuseDeepJson } from '@chronicle/runtime';

const KB = 1024;
const MB = 1024 * KB;
/** What a body carries beside its payload: a job's definition, an enqueue's options, a GraphQL document. */
const ENVELOPE_BYTES = 64 * KB;
const ONE_PAYLOAD = MAX_PAYLOAD_BYTES + ENVELOPE_BYTES;

export interface BodyLimit {
  readonly method: string;
  /** The path as the API routes it (`:name` for a parameter), for the documentation. */
  readonly route: string;
  readonly bytes: number;
}

/**
 * How large a JSON body each endpoint takes, read before parsing (larger is a 413 problem, read no
 * further): one payload of 256 KB and its envelope where a body carries a payload, a batch's worth where
 * it carries many, and DEFAULT_BODY_BYTES for every other body (names, filters, fencing tokens).
 */
export const BODY_LIMITS: readonly BodyLimit[] = [
  { method: 'PUT', route: '/v1/jobs/:name', bytes: ONE_PAYLOAD },
  { method: 'POST', route: '/v1/jobs/:name/runs', bytes: ONE_PAYLOAD },
  { method: 'POST', route: '/graphql', bytes: ONE_PAYLOAD },
  // Up to 1,000 runs: room for many payloads, not for 1,000 of the largest (split those over calls).
  { method: 'POST', route: '/v1/runs:batch', bytes: 16 * MB },
  // Up to 100 completions, each error up to 10,000 characters (6 bytes each when JSON escapes them).
  { method: 'POST', route: '/v1/runs:complete', bytes: 8 * MB },
];
export const DEFAULT_BODY_BYTES = 64 * KB;

/** A route as a pattern of request paths: a `:parameter` is one path segment. */
function pathPattern(route: string): RegExp {
  const escaped = route.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${escaped.replace(/\/:[a-z]+/gi, '/[^/]+')}$`);
}

/**
 * The API's JSON body parser: each body with its endpoint's limit, refused if it nests deeper than
 * MAX_JSON_DEPTH. Mounted on the app itself (configureApi), ahead of every route, GraphQL's included.
 */
export function bodyLimits(): (request: Request, response: Response, next: NextFunction) => void {
  const limits = BODY_LIMITS.map((limit) => ({
    ...limit,
    pattern: pathPattern(limit.route),
    parse: jsonBody(limit.bytes),
  }));
  const parseDefault = jsonBody(DEFAULT_BODY_BYTES);
  return (request, response, next) => {
    const limit = limits.find((l) => l.method === request.method && l.pattern.test(request.path));
    (limit?.parse ?? parseDefault)(request, response, next);
  };
}

/** express's JSON parser with a limit, its refusal of an oversized body naming the limit. */
function jsonBody(bytes: number): (request: Request, response: Response, next: NextFunction) => void {
  const parse = json({ limit: bytes, verify: refuseDeepJson() });
  const shown = bytes >= MB ? `${bytes / MB} MB` : `${bytes / KB} KB`;
  return (request, response, next) =>
    parse(request, response, (err?: unknown) => {
      if ((err as { type?: unknown } | undefined)?.type === 'entity.too.large')
        (err as Error).message = `the request body is over the ${shown} this endpoint takes`;
      next(err);
    });
}
