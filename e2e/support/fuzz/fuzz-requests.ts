import fc from 'fast-check';
import type { GraphQLSchema } from 'graphql';
import { operationsOf, type OpenApiDocument } from '../openapi-document';
import type { CallerKind, WorldPool } from './fuzz-world';
import { graphqlBodies } from './graphql-bodies';
import { hostileValue } from './hostile-values';
import {
  contentType,
  credentials,
  credentialsFor,
  extraHeaders,
  extraQuery,
  parameterSegment,
  queryValue,
  spoiling,
  type Credentials,
  type QueryPairs,
  type Segment,
  type Spoiling,
} from './http-parts';
import type { JsonTree } from './json-tree';
import { SchemaBodies } from './schema-bodies';

/** One generated request, before the world's values are put in it (wire.ts sends it). */
export interface RequestPlan {
  /** What it aims at: a documented operation (`post /v1/lease`), `post /graphql`, or `other` and `raw`. */
  readonly target: string;
  readonly method: string;
  readonly path: readonly Segment[];
  readonly query: QueryPairs;
  readonly credentials: Credentials;
  readonly contentType: string | undefined;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: JsonTree | undefined;
  readonly spoiling: Spoiling;
  /** A request written to the socket as these bytes (latin1), for what no HTTP client would send. */
  readonly raw?: string;
}

/** The operations the fuzz covers beside the document's: GraphQL, and what the process serves besides /v1. */
export const UNDOCUMENTED_TARGETS = ['post /graphql', 'get /metrics', 'get /dashboard'] as const;

const OTHER_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'M-SEARCH'];

/** A path parameter's kind of value, by its name (and, for `id`, the resource it is an id of). */
function poolOf(path: string, parameter: string): WorldPool {
  if (parameter === 'id') return path.includes('/tokens/') ? 'tokenId' : 'run';
  return ({ team: 'team', name: 'job', queue: 'queue' } as const)[parameter as 'team'] ?? 'job';
}

/** The kind of token an operation is for, by its path. */
function callerFor(method: string, path: string): CallerKind {
  if (/^\/v1\/(lease|runs\/\{id\}\/(heartbeat|complete)|runs:(heartbeat|complete))$/.test(path)) return 'worker';
  const admin =
    path === '/v1/teams' || path.startsWith('/v1/tokens') || path.includes('/grants') || path.endsWith('/quotas');
  return admin && !(method === 'get' && path.endsWith('/quotas')) ? 'admin' : 'team';
}

/** Every request the fuzz sends: the document's operations alike, GraphQL, the other paths, raw bytes. */
export function fuzzRequests(document: OpenApiDocument, schema: GraphQLSchema): fc.Arbitrary<RequestPlan> {
  const bodies = new SchemaBodies(document);
  const around = fc.record({
    credentials,
    contentType,
    headers: extraHeaders,
    spoiling,
    extraQuery,
  });
  const operations = operationsOf(document).map(({ method, path, operation }) => {
    const parts = path.split(/(\{[a-z]+\})/i).filter(Boolean);
    const segments = fc.tuple(
      ...parts.map((part) =>
        part.startsWith('{') ? parameterSegment(poolOf(path, part.slice(1, -1))) : fc.constant<Segment>(part),
      ),
    );
    const documented = fc.tuple(
      ...(operation.parameters ?? [])
        .filter((p) => p.in === 'query')
        .map((p) =>
          fc.option(
            queryValue(p.name, p.schema ?? {}).map((value) => [p.name, value] as const),
            { nil: undefined },
          ),
        ),
    );
    const media = operation.requestBody?.content['application/json'];
    const body = media === undefined ? fc.option(hostileValue, { freq: 4, nil: undefined }) : bodies.bodyOf(media);
    const wrongMethod = fc.oneof(
      { weight: 19, arbitrary: fc.constant(method.toUpperCase()) },
      { weight: 1, arbitrary: fc.constantFrom(...OTHER_METHODS) },
    );
    const caller = credentialsFor(callerFor(method, path));
    return fc
      .record({ method: wrongMethod, segments, documented, body, caller, around })
      .map(({ method: sent, segments, documented, body, caller, around }): RequestPlan => ({
        target: `${method} ${path}`,
        method: sent,
        path: segments,
        query: [...documented.filter((pair) => pair !== undefined), ...around.extraQuery],
        credentials: caller,
        contentType: body === undefined ? undefined : around.contentType,
        headers: around.headers,
        body,
        spoiling: around.spoiling,
      }));
  });
  const graphql = fc
    .record({ body: graphqlBodies(schema), caller: credentialsFor('team'), around })
    .map(({ body, caller, around }): RequestPlan => ({
      target: 'post /graphql',
      method: 'POST',
      path: ['/graphql'],
      query: around.extraQuery,
      credentials: caller,
      contentType: around.contentType,
      headers: around.headers,
      body,
      spoiling: around.spoiling,
    }));
  return fc.oneof(
    { weight: 70, arbitrary: fc.oneof(...operations) },
    { weight: 14, arbitrary: graphql },
    {
      weight: 12,
      arbitrary: fc
        .record({
          around,
          method: fc.constantFrom(...OTHER_METHODS),
          path: otherPath,
          body: fc.option(hostileValue, { freq: 3, nil: undefined }),
        })
        .map(({ around, method, path, body }): RequestPlan => ({
          target: path.target,
          method: path.target === 'other' ? method : path.target.split(' ')[0]!.toUpperCase(),
          path: [path.path],
          query: around.extraQuery,
          credentials: around.credentials,
          contentType: body === undefined ? undefined : around.contentType,
          headers: around.headers,
          body,
          spoiling: around.spoiling,
        })),
    },
    { weight: 4, arbitrary: rawRequest },
  );
}

/** Paths of the process beside /v1 (each a target of its own), and paths no route has. */
const otherPath: fc.Arbitrary<{ target: string; path: string }> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      { target: 'get /metrics', path: '/metrics' },
      { target: 'get /healthz', path: '/healthz' },
    ),
  },
  fc.constantFrom(
    { target: 'get /healthz', path: '/healthz' },
    { target: 'get /metrics', path: '/metrics' },
    { target: 'get /dashboard', path: '/dashboard' },
    { target: 'get /dashboard', path: '/dashboard/' },
    { target: 'get /dashboard', path: '/dashboard/runs/run_x' },
    { target: 'get /dashboard', path: '/dashboard/assets/missing.js' },
    { target: 'get /dashboard', path: '/dashboard/..%2f..%2fpackage.json' },
    { target: 'get /dashboard', path: '/dashboard/%2e%2e/%2e%2e/etc/passwd' },
    { target: 'get /dashboard', path: '/dashboard/%zz' },
    { target: 'get /dashboard', path: '/dashboard/favicon.svg%00.html' },
    { target: 'other', path: '/docs' },
    { target: 'other', path: '/docs-json' },
    { target: 'other', path: '/graphql' },
  ),
  fc
    .array(
      fc.constantFrom(
        'v1',
        'jobs',
        'runs',
        'teams',
        '..',
        '%2e%2e',
        '%2F',
        'dlq',
        ':replay',
        'x',
        '%00',
        '',
        'graphql',
        '~',
      ),
      { maxLength: 6 },
    )
    .map((parts) => ({ target: 'other', path: `/${parts.join('/')}` })),
  fc.webPath().map((path) => ({ target: 'other', path: path.startsWith('/') ? path : `/${path}` })),
);

/** Requests an HTTP client would not write: the parser's, not the handlers', to refuse. */
const rawRequest: fc.Arbitrary<RequestPlan> = fc
  .constantFrom(
    'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n',
    'POST /v1/teams HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\nConnection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
    'POST /v1/teams HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}',
    'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Nul: a\x00b\r\nConnection: close\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\nConnection: close\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: x\r\n folded: header\r\nConnection: close\r\n\r\n',
    'GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\nConnection: close\r\n\r\n',
    'GET http://evil.example/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    'GET /healthz HTTP/1.0\r\n\r\n',
    'GET /healthz HTTP/9.9\r\nHost: x\r\nConnection: close\r\n\r\n',
    'GET  /healthz  HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    'G\x00T /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    'GET /he\x7fal\tthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
    `GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 3000 }, (_, i) => `X-${i}: 1\r\n`).join('')}Connection: close\r\n\r\n`,
    'GET /healthz HTTP/1.1\nHost: x\nConnection: close\n\n',
    'POST /v1/teams HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\nConnection: close\r\n\r\n',
    'POST /v1/teams HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\nConnection: close\r\n\r\n',
    'POST /graphql HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n0\r\n\r\n',
    'GET /healthz?\xff\xfe=%ff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    '\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  )
  .map((raw): RequestPlan => ({
    target: 'raw',
    method: raw.split(' ', 1)[0]!,
    path: [],
    query: [],
    credentials: { none: true },
    contentType: undefined,
    headers: [],
    body: undefined,
    spoiling: { kind: 'none' },
    raw,
  }));
