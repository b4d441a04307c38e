import fc from 'fast-check';
import { CALLERS, type CallerKind, type WorldPool } from './fuzz-world';
import { hostileString, HOSTILE_INSTANTS, worldValue } from './hostile-values';
import type { WorldValue } from './json-tree';

/*
 * The parts of a request around its body, hostile or not: path segments (encoded slashes and dots,
 * NUL, bad percent-encodings, very long ones), query strings (repeated and bracketed keys, prototype
 * keys, enormous ones), the Authorization header (each of the world's tokens, garbage, long ones),
 * content types and encodings, and how a body's bytes are spoiled (invalid UTF-8, NUL, truncation).
 */

/** Percent-encoded UTF-8, lone surrogates too (as U+FFFD), where encodeURIComponent throws. */
export function percentEncoded(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((byte) =>
      /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

/** A path segment: text sent as is (already encoded), or a value of the world, percent-encoded when sent. */
export type Segment = string | WorldValue;

const HOSTILE_SEGMENTS = [
  '',
  '..',
  '.',
  '%2e%2e',
  '%2E%2E%2F%2E%2E',
  '..%2f..%2fetc%2fpasswd',
  'a%2Fb',
  '%2F',
  '%5C..%5C',
  '%00',
  'a%00b',
  '%',
  '%zz',
  '%ff',
  '%c0%af',
  '%ed%a0%80',
  '%E2%80%AE',
  '\xff\xfe',
  '%252e%252e',
  'ops.task%3Apause',
  'ops.task:pause',
  '__proto__',
  'constructor',
  '*',
  '{name}',
  ':name',
] as const;

/** A segment where a path parameter goes: mostly a value of the world, else hostile. */
export function parameterSegment(pool: WorldPool): fc.Arbitrary<Segment> {
  return fc.oneof(
    { weight: 13, arbitrary: worldValue([pool]) },
    { weight: 4, arbitrary: fc.constantFrom<Segment>(...HOSTILE_SEGMENTS) },
    { weight: 2, arbitrary: hostileString.map(percentEncoded) },
    { weight: 1, arbitrary: fc.constantFrom(250, 10_000).map((n) => 'a'.repeat(n)) },
  );
}

/** A query string's pairs; a value may be the world's (encoded when sent). */
export type QueryPairs = ReadonlyArray<readonly [string, Segment]>;

/** Beside the documented parameters: repeated and bracketed keys, prototype keys, and sheer size. */
export const extraQuery: fc.Arbitrary<QueryPairs> = fc.oneof(
  { weight: 6, arbitrary: fc.constant([]) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          'limit',
          'cursor',
          'state',
          'team',
          'job',
          'asOf',
          'count',
          'since',
          'x',
          '__proto__',
          'constructor',
        ),
        fc.constantFrom('', '[]', '[a]', '[__proto__]', '.b', '%5B%5D'),
        fc.array(fc.oneof(hostileString.map(percentEncoded), fc.constantFrom('1', '50', 'ready')), {
          minLength: 1,
          maxLength: 3,
        }),
      )
      .map(([key, suffix, values]) => values.map((value) => [`${key}${suffix}`, value] as const)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(8_000, 15_000, 100_000).map((n) => [['q', 'x'.repeat(n)] as const]),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(500, 3000).map((n) => Array.from({ length: n }, (_, i) => [`k${i}`, `${i}`] as const)),
  },
);

/** A documented query parameter's value, by its schema: conforming, of the world, or hostile. */
export function queryValue(
  name: string,
  schema: { type?: string; enum?: string[]; format?: string },
): fc.Arbitrary<Segment> {
  const pool = ({ cursor: 'cursor', job: 'job', queue: 'queue', team: 'team' } as const)[name as 'job'];
  const conforming: fc.Arbitrary<Segment> =
    pool !== undefined
      ? worldValue([pool])
      : schema.enum !== undefined
        ? fc.constantFrom(...schema.enum)
        : schema.format === 'date-time'
          ? fc.oneof(
              { weight: 3, arbitrary: worldValue(['instant']) },
              { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_INSTANTS).map(percentEncoded) },
            )
          : schema.type === 'integer' || schema.type === 'number'
            ? fc.oneof(
                fc.integer({ min: -2, max: 600 }).map(String),
                fc.constantFrom('1e400', '1.5', '0x10', '-0', '', '9'.repeat(30)),
              )
            : name === 'stream'
              ? fc.constantFrom('job-ops.task', 'team-ops', 'run-', 'job-billing.export')
              : name === 'actor'
                ? fc.constantFrom('admin', 'team:ops', 'team:billing', 'worker:ops:x')
                : name === 'type'
                  ? fc.constantFrom('RunDead', 'RunScheduled', 'JobDefined')
                  : fc.string({ maxLength: 10 }).map(percentEncoded);
  return fc.oneof({ weight: 4, arbitrary: conforming }, { weight: 1, arbitrary: hostileString.map(percentEncoded) });
}

/** How a request says who it is: one of the world's tokens, none, or something that is not a token. */
export type Credentials =
  { readonly caller: CallerKind; readonly scheme: string } | { readonly raw: string } | { readonly none: true };

export const credentials: fc.Arbitrary<Credentials> = fc.oneof(
  {
    weight: 17,
    arbitrary: fc.record({
      caller: fc.constantFrom(...CALLERS),
      scheme: fc.oneof(
        { weight: 9, arbitrary: fc.constant('Bearer ') },
        { weight: 1, arbitrary: fc.constantFrom('bearer ', 'Bearer  ', 'BEARER ', 'Bearer\t', 'Basic ', '') },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ none: true } as const) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom(
          'Bearer',
          'Bearer ',
          'Bearer sch_team_',
          'Bearer null',
          'Basic YWRtaW46YWRtaW4=',
          'Bearer a b c',
          'Bearer \xff\xfe',
        ),
        fc.string({ unit: 'binary-ascii', maxLength: 60 }).map((s) => `Bearer ${s}`),
        fc.constantFrom(1000, 20_000).map((n) => `Bearer ${'t'.repeat(n)}`),
      )
      .map((raw) => ({ raw })),
  },
);

/** Mostly the token an operation is for (so that most requests reach its handler), else any of the mix. */
export function credentialsFor(likely: CallerKind): fc.Arbitrary<Credentials> {
  return fc.oneof(fc.constant({ caller: likely, scheme: 'Bearer ' }), credentials);
}

/** The body's media type: JSON mostly (so the handler sees it), else what it is not. */
export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 16, arbitrary: fc.constant('application/json') },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      undefined,
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'application/json; charset=latin1',
      'application/json; charset=nope',
      'application/problem+json',
      'application/merge-patch+json',
      'text/plain',
      'application/xml',
      'text/html',
      'multipart/form-data; boundary=----x',
      'application/x-www-form-urlencoded',
      'application/graphql',
      'application/octet-stream',
      'application/json;;;;',
      '',
      `application/json; ${'a=b; '.repeat(500)}`,
    ),
  },
);

/** Headers besides Authorization and Content-Type: the API's own, and noise. */
export const extraHeaders: fc.Arbitrary<ReadonlyArray<readonly [string, string]>> = fc.array(
  fc.oneof(
    fc.tuple(
      fc.constant('idempotency-key'),
      fc.oneof(
        fc.constantFrom('fuzz-key-1', 'k', 'x'.repeat(201), ' '),
        fc.string({ unit: 'binary-ascii', maxLength: 20 }),
      ),
    ),
    fc.tuple(fc.constant('x-request-id'), fc.oneof(fc.uuid(), fc.constantFrom('', 'x'.repeat(5000), '../../', '\xff'))),
    fc.tuple(
      fc.constant('accept'),
      fc.constantFrom('application/x-ndjson', 'text/html', '*/*', 'application/xml', 'image/*;q=0'),
    ),
    fc.tuple(fc.constant('content-encoding'), fc.constantFrom('identity', 'br', 'compress', 'x-unknown')),
    fc.tuple(fc.constant('if-none-match'), fc.constantFrom('*', '"x"', 'W/"1"')),
    fc.tuple(fc.constant('accept-encoding'), fc.constantFrom('gzip', 'br;q=1, *;q=0', 'x'.repeat(1000))),
    fc.tuple(
      fc.constantFrom('x-forwarded-for', 'forwarded', 'x-real-ip'),
      fc.constantFrom('1.2.3.4', 'unknown', '::1, 10.0.0.1'),
    ),
    fc.tuple(
      fc.constantFrom('x-fuzz', 'x-long'),
      fc.constantFrom(100, 8_000, 20_000).map((n) => 'h'.repeat(n)),
    ),
    fc.tuple(
      fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz-_.!#$%&*+^`|~'), minLength: 1, maxLength: 20 }),
      // Control characters too: Node's client will not send them, so such a request goes out as raw bytes.
      fc.string({ unit: 'binary-ascii', maxLength: 30 }),
    ),
  ),
  { maxLength: 3 },
);

/** What is done to a body's bytes after it is written as JSON. */
export type Spoiling =
  | { readonly kind: 'none' }
  | { readonly kind: 'truncate'; readonly at: number }
  | { readonly kind: 'insert'; readonly at: number; readonly bytes: readonly number[] }
  | { readonly kind: 'bom' | 'utf16le' | 'gzip' | 'deflate' | 'gzip-bomb' | 'concatenated' | 'padded' | 'empty' };

/** Invalid UTF-8: a lone continuation, an overlong slash, a surrogate, a cut sequence, bytes never used; and NUL. */
const BAD_BYTES = [
  [0x80],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0xff],
  [0xfe, 0xff],
  [0x00],
  [0xf4, 0x90, 0x80, 0x80],
];

export const spoiling: fc.Arbitrary<Spoiling> = fc.oneof(
  { weight: 16, arbitrary: fc.constant({ kind: 'none' } as const) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.constantFrom(...BAD_BYTES) }),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('bom', 'utf16le', 'gzip', 'deflate', 'gzip-bomb', 'concatenated', 'padded', 'empty')
      .map((kind) => ({ kind }) as Spoiling),
  },
);
