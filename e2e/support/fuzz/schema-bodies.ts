import fc from 'fast-check';
import type { MediaType, OpenApiDocument } from '../openapi-document';
import type { WorldPool } from './fuzz-world';
import { CRON_EXPRESSIONS, HOSTILE_KEYS, hostileValue, RRULES, TIME_ZONES, worldValue } from './hostile-values';
import { changeTree, JsonEntries, treeChange, treeOf, type JsonTree } from './json-tree';

/*
 * Request bodies from the OpenAPI document's schemas: values that conform (names of the world's
 * teams, jobs, queues and runs where a field names one), then a few changes to them (a field
 * replaced by a hostile value, a key added, repeated or removed, a value wrapped), or the document's
 * own examples changed the same way.
 */

interface Schema {
  readonly $ref?: string;
  readonly allOf?: readonly Schema[];
  readonly type?: string;
  readonly enum?: readonly unknown[];
  readonly nullable?: boolean;
  readonly pattern?: string;
  readonly format?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly items?: Schema;
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
}

/** Fields named like a kind of the world's values: a conforming body names real ones. */
const FIELD_POOLS: Readonly<Record<string, WorldPool>> = {
  job: 'job',
  queue: 'queue',
  queues: 'queue',
  team: 'team',
  runId: 'run',
  fencingToken: 'fencingToken',
  idempotencyKey: 'idempotencyKey',
};

const ZONES = [...TIME_ZONES, ...Intl.supportedValuesOf('timeZone').filter((_, i) => i % 20 === 0)];
const HOUR = 3_600_000;

/** Instants around now (a past week and a future one), some of the world's, some at odd precisions. */
const instant: fc.Arbitrary<JsonTree> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .integer({ min: -7 * 24, max: 7 * 24 })
      .map((hours) => new Date(Date.now() + hours * HOUR).toISOString()),
  },
  { weight: 1, arbitrary: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()) },
  { weight: 1, arbitrary: worldValue(['instant']) },
);

/** Five cron fields, each a star, a value, a step, a range or a list (some out of range). */
const cronExpression: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      fc.constant('*'),
      fc.integer({ min: -1, max: 61 }).map(String),
      fc.integer({ min: 0, max: 61 }).map((n) => `*/${n}`),
      fc.tuple(fc.nat(60), fc.nat(60)).map(([a, b]) => `${a}-${b}`),
      fc.array(fc.nat(60), { minLength: 2, maxLength: 4 }).map((list) => list.join(',')),
    ),
    { minLength: 4, maxLength: 6 },
  )
  .map((fields) => fields.join(' '));

/** An RRULE of a frequency and some BY parts, in and out of their ranges: most never-firing rules are made of these. */
const rrule: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('YEARLY', 'MONTHLY', 'WEEKLY', 'DAILY', 'HOURLY', 'MINUTELY'),
    fc.option(fc.integer({ min: -1, max: 5000 }), { nil: undefined }),
    fc.subarray(['BYHOUR', 'BYMINUTE', 'BYMONTH', 'BYMONTHDAY', 'BYYEARDAY', 'BYWEEKNO', 'BYSETPOS', 'COUNT']),
    fc.array(fc.integer({ min: -400, max: 400 }), { minLength: 1, maxLength: 3 }),
    fc.option(fc.constantFrom('MO', 'TU,TH', '1MO', '-1FR', '53SU', 'XX'), { nil: undefined }),
  )
  .map(([freq, interval, parts, values, byday]) =>
    [
      `FREQ=${freq}`,
      ...(interval === undefined ? [] : [`INTERVAL=${interval}`]),
      ...parts.map((part, i) => `${part}=${values.slice(0, part === 'COUNT' ? 1 : 1 + (i % 3)).join(',')}`),
      ...(byday === undefined ? [] : [`BYDAY=${byday}`]),
    ].join(';'),
  );

/** Schedules that fire, most of the time, so that definitions and previews get past their checks. */
const FIRING_CRONS = ['* * * * *', '0 2 * * *', '*/15 9-17 * * 1-5', '30 6 1 * *'];
const FIRING_RRULES = [
  'FREQ=DAILY;BYHOUR=9;BYMINUTE=0',
  'FREQ=MONTHLY;BYDAY=MO;BYSETPOS=1',
  'FREQ=MINUTELY;INTERVAL=15',
];

const FIELD_VALUES: Readonly<Record<string, fc.Arbitrary<JsonTree>>> = {
  cron: fc.oneof(fc.constantFrom(...FIRING_CRONS), fc.constantFrom(...CRON_EXPRESSIONS), cronExpression),
  rrule: fc.oneof(fc.constantFrom(...FIRING_RRULES), fc.constantFrom(...RRULES), rrule),
  timeZone: fc.constantFrom(...ZONES),
};

export class SchemaBodies {
  constructor(private readonly document: OpenApiDocument) {}

  /** A body of a media type of an operation: conforming, changed, or the document's example changed. */
  bodyOf(media: MediaType): fc.Arbitrary<JsonTree> {
    const examples = [media.example, ...Object.values(media.examples ?? {}).map((e) => e.value)].filter(
      (e) => e !== undefined,
    );
    const conforming = this.valueOf(media.schema as Schema, undefined, 0);
    const bases = examples.length === 0 ? conforming : fc.oneof(conforming, fc.constantFrom(...examples).map(treeOf));
    const keys = fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 12 }));
    return fc.oneof(
      { weight: 4, arbitrary: conforming },
      {
        weight: 5,
        arbitrary: fc
          .tuple(bases, fc.array(treeChange(hostileValue, keys), { minLength: 1, maxLength: 3 }))
          .map(([base, changes]) => changes.reduce(changeTree, base)),
      },
      { weight: 1, arbitrary: hostileValue },
    );
  }

  private valueOf(schema: Schema | undefined, field: string | undefined, depth: number): fc.Arbitrary<JsonTree> {
    const resolved = this.resolve(schema ?? {});
    const value = this.conformingValue(resolved, field, depth);
    return resolved.nullable === true
      ? fc.oneof({ weight: 9, arbitrary: value }, { weight: 1, arbitrary: fc.constant(null) })
      : value;
  }

  private conformingValue(schema: Schema, field: string | undefined, depth: number): fc.Arbitrary<JsonTree> {
    const pool = field === undefined ? undefined : FIELD_POOLS[field];
    const named = field === undefined ? undefined : FIELD_VALUES[field];
    if (named !== undefined) return named;
    if (schema.enum !== undefined) return fc.constantFrom(...(schema.enum.filter((v) => v !== null) as JsonTree[]));
    switch (schema.type) {
      case 'object':
        return this.objectOf(schema, depth);
      case 'array': {
        const items = this.valueOf(schema.items, field, depth + 1);
        const minLength = schema.minItems ?? 0;
        return fc.array(items, { minLength, maxLength: Math.min(schema.maxItems ?? 4, minLength + 3) });
      }
      case 'integer':
      case 'number': {
        const range = fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
        return pool === undefined ? range : fc.oneof(worldValue([pool]), range);
      }
      case 'boolean':
        return fc.boolean();
      case 'string':
        return this.stringOf(schema, pool);
      default:
        // A payload: any JSON value, or a value of the world.
        return depth > 2 ? fc.constant(null) : fc.oneof(fc.jsonValue({ maxDepth: 3 }).map(treeOf), worldValue());
    }
  }

  private objectOf(schema: Schema, depth: number): fc.Arbitrary<JsonTree> {
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties ?? {});
    return fc
      .tuple(
        ...fields.map(([name, property]) =>
          required.has(name)
            ? this.valueOf(property, name, depth + 1).map((value) => [[name, value] as const])
            : fc
                .option(this.valueOf(property, name, depth + 1), { nil: undefined })
                .map((value) => (value === undefined ? [] : [[name, value] as const])),
        ),
      )
      .map((entries) => new JsonEntries(entries.flat()));
  }

  private stringOf(schema: Schema, pool: WorldPool | undefined): fc.Arbitrary<JsonTree> {
    if (schema.format === 'date-time' || schema.format === 'iso8601') return instant;
    const shaped =
      schema.pattern !== undefined
        ? fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= 200)
        : fc.string({ maxLength: Math.min(schema.maxLength ?? 40, 40) });
    return pool === undefined
      ? shaped
      : fc.oneof({ weight: 3, arbitrary: worldValue([pool]) }, { weight: 1, arbitrary: shaped });
  }

  private resolve(schema: Schema): Schema {
    if (schema.$ref !== undefined) {
      const name = schema.$ref.slice(schema.$ref.lastIndexOf('/') + 1);
      return this.resolve(this.document.components.schemas[name] as Schema);
    }
    if (schema.allOf !== undefined) {
      const { allOf, ...rest } = schema;
      const parts = allOf.map((part) => this.resolve(part));
      return {
        ...Object.assign({}, ...parts),
        ...rest,
        properties: Object.assign({}, ...parts.map((p) => p.properties), rest.properties),
        required: parts.flatMap((p) => p.required ?? []).concat(rest.required ?? []),
      };
    }
    return schema;
  }
}
