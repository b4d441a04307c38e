import fc from 'fast-check';
import { WORLD_POOLS } from './fuzz-world';
import { JsonEntries, RawJson, treeOf, WorldValue, type JsonTree } from './json-tree';

/*
 * The classics of hostile input, as values of a JSON body: numbers past a double's range, strings with
 * NUL and lone surrogates, nesting around the limit and far past it, keys that name a prototype,
 * instants, cron expressions, RRULEs and time zones at and past their edges.
 */

/** Numbers as their JSON text: past a double, below its precision, -0, 2^53 + 1, 2^64. */
const HOSTILE_NUMBERS = [
  '1e400',
  '-1e400',
  '1e-400',
  '-0',
  '-0.0',
  '18446744073709551616',
  '9007199254740993',
  '-9223372036854775809',
  '9223372036854775807',
  '123456789012345678901234567890.123456789',
  '0.1e1',
  '1E+2',
  '1.5',
  '-1',
  '2147483648',
  '4294967296',
] as const;

export const HOSTILE_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff\ud800',
  '\u202egnp.exe',
  '\ufeff',
  '😀'.repeat(50),
  'Ω≈ç√∫˜µ≤≥÷',
  '../../../../etc/passwd',
  '..%2f..%2f',
  '%00',
  '\r\nX-Injected: yes',
  '${jndi:ldap://127.0.0.1/a}',
  "' OR '1'='1' --",
  '<script>alert(1)</script>',
  '__proto__',
  'constructor',
  'null',
  'true',
  '-1',
  'NaN',
  'run_',
  `run_${'A'.repeat(65)}`,
  'a'.repeat(201),
  'x'.repeat(70_000),
] as const;

export const HOSTILE_INSTANTS = [
  '2026-02-30T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-01-01T24:00:00Z',
  '2026-01-01T00:00:60Z',
  '2026-01-01T00:00:00+25:00',
  '2026-01-01T00:00:00.123456789Z',
  '2026-01-01',
  '2026-01-01T00:00:00',
  '0000-01-01T00:00:00Z',
  '1970-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '+275760-09-13T00:00:00.000Z',
  '-271821-04-20T00:00:00.000Z',
  '2026-03-29T02:30:00+01:00',
  'P1D',
  'now',
  '1700000000',
] as const;

export const CRON_EXPRESSIONS = [
  '* * * * *',
  '0 2 * * *',
  '*/15 9-17 * * 1-5',
  '*/0 * * * *',
  '0 0 31 2 *',
  '0 0 29 2 1',
  '60 * * * *',
  '* 24 * * *',
  '* * * * * *',
  '1-0 * * * *',
  '*/1000000 * * * *',
  '0 0 L * *',
  '0 0 ? * *',
  '0 0 * * 5#3',
  '@yearly',
  '@reboot',
  '0,,1 * * * *',
  '-1 * * * *',
  '9999999999999999999 * * * *',
] as const;

export const RRULES = [
  'FREQ=DAILY',
  'FREQ=MONTHLY;BYDAY=MO;BYSETPOS=1;BYHOUR=9;BYMINUTE=0',
  'FREQ=SECONDLY',
  'FREQ=MINUTELY;INTERVAL=7',
  'FREQ=DAILY;INTERVAL=0',
  'FREQ=DAILY;INTERVAL=-1',
  'FREQ=HOURLY;BYHOUR=25',
  'FREQ=HOURLY;INTERVAL=2;BYHOUR=1',
  'FREQ=MINUTELY;BYMINUTE=60',
  'FREQ=MINUTELY;INTERVAL=120;BYHOUR=9',
  'FREQ=MINUTELY;INTERVAL=3600;BYMINUTE=30',
  'FREQ=MINUTELY;BYMONTH=13',
  'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30',
  'FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30',
  'FREQ=YEARLY;BYWEEKNO=54',
  'FREQ=YEARLY;BYYEARDAY=367',
  'FREQ=MONTHLY;BYSETPOS=-366;BYDAY=MO',
  'FREQ=DAILY;COUNT=0',
  'FREQ=DAILY;COUNT=99999999999999999999',
  'FREQ=DAILY;UNTIL=19700101T000000',
  'FREQ=WEEKLY;BYDAY=XX',
  'FREQ=SOMETIMES',
  'DTSTART:99991231T000000\nRRULE:FREQ=DAILY',
  'DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY',
  'FREQ=DAILY\nEXRULE:FREQ=DAILY',
  'FREQ=MINUTELY\nEXRULE:FREQ=MINUTELY',
  'FREQ=DAILY\nEXDATE:20260102T000000',
  'BYHOUR=9',
] as const;

export const TIME_ZONES = [
  'UTC',
  'Europe/Berlin',
  'America/Mexico_City',
  'Australia/Lord_Howe',
  'Asia/Kathmandu',
  'Pacific/Apia',
  'Etc/GMT+12',
  'Etc/GMT-14',
  'Mars/Olympus',
  'europe/berlin',
  '+01:00',
  'Local',
  '../../../../etc/localtime',
] as const;

/** Keys that name a prototype, or that the API's own bodies use. */
export const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', '\u0000'];

/** `[[[…]]]` or `{"a":{"a":…}}`, `depth` levels: at the limit of 64, just past it, and far past it. */
function nested(depth: number, object: boolean): RawJson {
  return object
    ? new RawJson('{"a":'.repeat(depth) + '1' + '}'.repeat(depth))
    : new RawJson('['.repeat(depth) + ']'.repeat(depth));
}

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...HOSTILE_STRINGS, ...HOSTILE_INSTANTS, ...CRON_EXPRESSIONS, ...RRULES, ...TIME_ZONES),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
);

/** A hostile JSON value, anywhere a body takes one. */
export const hostileValue: fc.Arbitrary<JsonTree> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_NUMBERS).map((text) => new RawJson(text)) },
  { weight: 4, arbitrary: hostileString },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(1, 63, 64, 65, 1000, 20_000), fc.boolean())
      .map(([depth, object]) => nested(depth, object)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(10_000, 100_000).map((n) => new RawJson(`[${'0,'.repeat(n - 1)}0]`)),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...HOSTILE_KEYS), fc.jsonValue({ maxDepth: 2 }))
      .map(([key, value]) => new JsonEntries([[key, treeOf(value)]])),
  },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(treeOf) },
  { weight: 1, arbitrary: fc.constantFrom<JsonTree>(null, true, false, 0, [], new JsonEntries([])) },
  { weight: 3, arbitrary: worldValue() },
);

/** A value of the world, by index: most bodies that reach a handler name something real. */
export function worldValue(pools: readonly (typeof WORLD_POOLS)[number][] = WORLD_POOLS): fc.Arbitrary<WorldValue> {
  return fc.tuple(fc.constantFrom(...pools), fc.nat()).map(([pool, n]) => new WorldValue(pool, n));
}
