import fc from 'fast-check';
import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  parse,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { hostileString, hostileValue } from './hostile-values';
import { JsonEntries, JsonTemplate, RawJson, treeOf, WorldValue, type JsonTree } from './json-tree';
import type { WorldPool } from './fuzz-world';

/*
 * POST /graphql bodies from the server's own schema (its introspection): queries and mutations of
 * random fields, arguments and nested selections, aliased or not, their arguments typed and named
 * after the world's values or hostile, inline or as variables; and the classic bombs: depth, aliases,
 * fragments spread twice at every level, a field repeated thousands of times, directives, operations,
 * and enormous variables.
 */

/** An argument named like a kind of the world's values: its value names a real one. */
const ARGUMENT_POOLS: Readonly<Record<string, WorldPool>> = {
  id: 'run',
  job: 'job',
  name: 'job',
  queue: 'queue',
  team: 'team',
  after: 'cursor',
  idempotencyKey: 'idempotencyKey',
  since: 'instant',
  until: 'instant',
  dueAfter: 'instant',
  dueBefore: 'instant',
};
const SIZES = [0, 1, 5, 50, 500, 501, -1, 2_147_483_648] as const;

interface QueryPlan {
  readonly choices: readonly number[];
  readonly hostile: readonly JsonTree[];
  readonly maxDepth: number;
  readonly mutation: boolean;
  readonly variables: boolean;
}

export function graphqlBodies(schema: GraphQLSchema): fc.Arbitrary<JsonTree> {
  const plans = fc.record({
    choices: fc.array(fc.nat(), { minLength: 64, maxLength: 64 }),
    hostile: fc.array(hostileValue, { minLength: 4, maxLength: 4 }),
    maxDepth: fc.integer({ min: 1, max: 12 }),
    mutation: fc.boolean(),
    variables: fc.boolean(),
  });
  return fc.oneof(
    { weight: 8, arbitrary: plans.map((plan) => new QueryBuilder(schema, plan).body()) },
    { weight: 2, arbitrary: bombs },
  );
}

/** One query of a plan: every choice (a field, an alias, an argument) is the plan's next number. */
class QueryBuilder {
  private next = 0;
  private readonly declared: string[] = [];
  private readonly variables: Array<readonly [string, JsonTree]> = [];
  /** The world's values written inline, each marked in the query's text by its index between two SOH. */
  private readonly inline: WorldValue[] = [];

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly plan: QueryPlan,
  ) {}

  body(): JsonTree {
    const root = this.plan.mutation ? this.schema.getMutationType() : this.schema.getQueryType();
    const selection = this.selection(root!, 1);
    const header = this.declared.length === 0 ? '' : `(${this.declared.join(', ')})`;
    const query = `${this.plan.mutation ? 'mutation' : 'query'} Fuzz${header} { ${selection} }`;
    const parts = query.split(MARK).map((part, i) => (i % 2 === 0 ? part : this.inline[Number(part)]!));
    return new JsonEntries([
      ['query', new JsonTemplate(parts)],
      ['variables', new JsonEntries(this.variables)],
    ]);
  }

  private choose(n: number): number {
    return this.plan.choices[this.next++ % this.plan.choices.length]! % n;
  }

  private selection(type: GraphQLObjectType, depth: number): string {
    const fields = Object.values(type.getFields());
    const leaves = fields.filter((f) => isLeafType(getNamedType(f.type)));
    const pickable = depth >= this.plan.maxDepth && leaves.length > 0 ? leaves : fields;
    return Array.from({ length: 1 + this.choose(3) }, (_, i) => {
      const field = pickable[this.choose(pickable.length)]!;
      const alias = this.choose(6) === 0 ? `a${depth}_${i}: ` : '';
      const named = getNamedType(field.type);
      const inner = isObjectType(named) ? ` { ${this.selection(named, depth + 1)} }` : '';
      return `${alias}${field.name}${this.argumentsOf(field)}${inner}`;
    }).join(' ');
  }

  private argumentsOf(field: GraphQLField<unknown, unknown>): string {
    const given = field.args.filter((arg) => isNonNullType(arg.type) || this.choose(2) === 0);
    if (given.length === 0) return '';
    return `(${given.map((arg) => `${arg.name}: ${this.argument(arg)}`).join(', ')})`;
  }

  private argument(arg: GraphQLArgument): string {
    const value =
      this.choose(5) === 0
        ? this.plan.hostile[this.choose(this.plan.hostile.length)]!
        : this.valueOf(arg.type, arg.name);
    if (!this.plan.variables) return literal(value, this.inline);
    const name = `v${this.declared.length}`;
    this.declared.push(`$${name}: ${arg.type.toString()}`);
    this.variables.push([name, value]);
    return `$${name}`;
  }

  private valueOf(type: GraphQLInputType, name: string): JsonTree {
    const nullable = getNullableType(type);
    if (isListType(nullable)) return [this.valueOf(nullable.ofType, name)];
    if (isEnumType(nullable)) {
      const values = nullable.getValues().map((v) => v.name);
      // As a variable an enum is its name's string; inline, the bare name.
      const chosen = this.choose(8) === 0 ? 'not_a_state' : values[this.choose(values.length)]!;
      return this.plan.variables ? chosen : new RawJson(chosen);
    }
    if (isInputObjectType(nullable))
      return new JsonEntries(
        Object.values(nullable.getFields())
          .filter((f) => isNonNullType(f.type) || this.choose(2) === 0)
          .map((f) => [f.name, this.valueOf(f.type, f.name)] as const),
      );
    const pool = ARGUMENT_POOLS[name];
    switch (nullable.name) {
      case 'Int':
        return SIZES[this.choose(SIZES.length)]!;
      case 'Float':
        return this.choose(100) / 4;
      case 'Boolean':
        return this.choose(2) === 0;
      case 'JSON':
        return treeOf({ format: 'csv', n: this.choose(1000), queue: 'ops' });
      case 'DateTime':
        return new WorldValue('instant', this.choose(10));
      default:
        // String and ID: a value of the world where the argument names one; a cron or zone for a schedule's.
        if (pool !== undefined) return new WorldValue(pool, this.choose(50));
        if (name === 'cron') return ['* * * * *', '0 2 * * *', '0 0 31 2 *'][this.choose(3)]!;
        if (name === 'rrule') return ['FREQ=DAILY', 'FREQ=DAILY;INTERVAL=0', 'FREQ=HOURLY;BYHOUR=25'][this.choose(3)]!;
        if (name === 'timeZone') return ['UTC', 'Europe/Berlin', 'Mars/Olympus'][this.choose(3)]!;
        return ['ops', 'ops.task', 'x', ''][this.choose(4)]!;
    }
  }
}

const MARK = '\u0001';

/**
 * A value as GraphQL writes it inline: strings as JSON does, names of objects bare, raw text as is; a
 * value of the world as a mark, written when the request is sent.
 */
function literal(value: JsonTree, inline: WorldValue[]): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof WorldValue) return `${MARK}${inline.push(value) - 1}${MARK}`;
  if (value instanceof JsonTemplate) return JSON.stringify(value.parts.filter((p) => typeof p === 'string').join(''));
  if (value instanceof JsonEntries)
    return `{${value.entries.map(([key, item]) => `${NAME.test(key) ? key : JSON.stringify(key)}: ${literal(item, inline)}`).join(', ')}}`;
  if (Array.isArray(value)) return `[${value.map((item: JsonTree) => literal(item, inline)).join(', ')}]`;
  return JSON.stringify(value);
}

const NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

const query = (text: string, variables?: JsonTree): JsonTree =>
  new JsonEntries([['query', text], ...(variables === undefined ? [] : [['variables', variables] as const])]);

/** Each classic as the size that shows it: just past the limit, and far past it. */
const bombs: fc.Arbitrary<JsonTree> = fc.oneof(
  fc.constantFrom(2, 11, 40).map((n) => {
    let inner = 'name';
    for (let i = 0; i < n; i++) inner = `name fields { type { ${inner} } }`;
    return query(`{ __schema { types { ${inner} } } }`);
  }),
  fc
    .constantFrom(20, 21, 500)
    .map((n) => query(`{ ${Array.from({ length: n }, (_, i) => `a${i}: queues { queue }`).join(' ')} }`)),
  fc
    .constantFrom(4, 12, 30)
    .map((n) =>
      query(
        `query { ...F0 } ${Array.from({ length: n }, (_, i) => `fragment F${i} on Query { queues { queue } ${i + 1 < n ? `...F${i + 1} ...F${i + 1}` : ''} }`).join(' ')}`,
      ),
    ),
  fc.constantFrom(1000, 40_000).map((n) => query(`{ queues { ${'queue '.repeat(n)}} }`)),
  fc.constantFrom(100, 10_000).map((n) => query(`{ queues ${'@include(if: true) '.repeat(n)}{ queue } }`)),
  fc
    .constantFrom(2, 2000)
    .map((n) => query(Array.from({ length: n }, (_, i) => `query Q${i} { queues { queue } }`).join(' '))),
  fc
    .constantFrom(10, 25)
    .map((n) =>
      query(
        `{ jobs { edges { node { runs(first: 500) { edges { node { events { type } attempts { attempt } } } } } } } ${'a'.repeat(n)}: queues { queue } }`,
      ),
    ),
  fc
    .constantFrom(1000, 30_000)
    .map((n) =>
      query(
        'mutation($p: JSON) { enqueueRun(job: "ops.task", payload: $p) { id } }',
        new JsonEntries([['p', new RawJson(`{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`)]]),
      ),
    ),
  fc.tuple(hostileString, hostileValue).map(([text, variables]) => query(text, variables)),
  fc.constantFrom<JsonTree>(
    [query('{ queues { queue } }'), query('{ queues { queue } }')],
    new JsonEntries([['query', 42]]),
    new JsonEntries([['variables', new JsonEntries([])]]),
    new JsonEntries([
      ['query', 'query A { queues { queue } } query B { queues { ready } }'],
      ['operationName', 'C'],
    ]),
    query('{ queues { queue '),
    query(`{ run(id: "${'"'.repeat(3)}${'x'.repeat(100_000)}${'"'.repeat(3)}") { id } }`),
    query('subscription { queues { queue } }'),
    query('fragment A on Query { ...B } fragment B on Query { ...A } { ...A }'),
  ),
);

/**
 * Whether GraphQL refused the whole of a request: nothing it asks for may have been decided. An answer
 * with no data, or a single root field that came back null, its error the field's own (or the request's):
 * an error further down (`pauseJob.nextFireTimes`) is in what the client asked to see of a decision made,
 * and null propagation leaves no data even so. Several root fields may each have done their part before
 * one failed: such a request is not refused either.
 */
export function graphqlRefusedAll(requestText: string, answer: unknown): boolean {
  const { data, errors } = (answer ?? {}) as {
    data?: Record<string, unknown> | null;
    errors?: Array<{ path?: readonly unknown[] }>;
  };
  if (errors === undefined || errors.length === 0) return false;
  if (!errors.every((e) => (e.path?.length ?? 0) <= 1)) return false;
  if (data === undefined || data === null) return rootFieldsOf(requestText) <= 1;
  return Object.values(data).every((value) => value === null) && rootFieldsOf(requestText) === 1;
}

/** How many root fields the request's operations select; Infinity when that cannot be told (fragments). */
function rootFieldsOf(requestText: string): number {
  try {
    const document = parse((JSON.parse(requestText) as { query: string }).query);
    let count = 0;
    for (const definition of document.definitions) {
      if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
      for (const selection of definition.selectionSet.selections) count += selection.kind === Kind.FIELD ? 1 : Infinity;
    }
    return count;
  } catch {
    return 0; // no operation could have run
  }
}
