import { buildSchema, Kind, parse, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql';
import { measureOperation } from './query-limits';

/** A schema with a cycle (Job.runs -> Run.job -> Job), where a query can be as deep as its author likes. */
const schema = buildSchema(`
  type Query { jobs(first: Int): JobConnection!  queues: [Queue!]!  preview(count: Int): [String!]! }
  type JobConnection { edges: [JobEdge!]!  pageInfo: PageInfo! }
  type JobEdge { cursor: String!  node: Job! }
  type PageInfo { hasNextPage: Boolean! }
  type Job { name: String!  runs(first: Int): [Run!]! }
  type Run { id: String!  job: Job!  events: [Event!]! }
  type Event { type: String! }
  type Queue { name: String! }
`);

function measure(query: string, variables: Record<string, unknown> = {}) {
  const document = parse(query);
  const operation = document.definitions.find(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  )!;
  const fragments = new Map(
    document.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((d) => [d.name.value, d]),
  );
  return measureOperation(schema, operation, fragments, variables);
}

describe('measuring a query for its limits', () => {
  it('counts depth in nested fields, through fragments and inline fragments', () => {
    expect(measure('{ queues { name } }').depth).toBe(2);
    expect(measure('{ jobs { edges { node { runs { job { runs { id } } } } } } }').depth).toBe(7);
    expect(
      measure('fragment J on Job { runs { ... on Run { job { name } } } } { jobs { edges { node { ...J } } } }').depth,
    ).toBe(6);
  });

  it('counts every aliased field, those of fragments where they are spread', () => {
    expect(measure('{ a: queues { n: name } b: queues { name } }').aliases).toBe(3);
    expect(measure('fragment Q on Queue { x: name } { a: queues { ...Q } b: queues { ...Q } }').aliases).toBe(4);
  });

  it('weighs each field by the items of the lists it is in: first (50 unless given), count, 10 for others', () => {
    // queues: 10 × (1 + name 1)
    expect(measure('{ queues { name } }').complexity).toBe(20);
    // jobs(first: 3) × (1 + edges (1 + node (1 + name 1)))
    expect(measure('{ jobs(first: 3) { edges { node { name } } } }').complexity).toBe(3 * 4);
    // without first, a connection is a page of 50
    expect(measure('{ jobs { edges { cursor } } }').complexity).toBe(50 * 3);
    expect(measure('query ($n: Int) { jobs(first: $n) { edges { cursor } } }', { n: 7 }).complexity).toBe(7 * 3);
    expect(measure('{ preview(count: 40) }').complexity).toBe(40);
    // jobs × (1 + edges (1 + node (1 + runs × (1 + events × (1 + type)))))
    expect(measure('{ jobs(first: 2) { edges { node { runs(first: 5) { events { type } } } } } }').complexity).toBe(
      2 * (1 + (1 + (1 + 5 * (1 + 10 * (1 + 1))))),
    );
  });

  it('leaves introspection and __typename out', () => {
    expect(measure('{ __schema { types { fields { type { ofType { ofType { name } } } } } } }')).toEqual({
      depth: 0,
      aliases: 0,
      complexity: 0,
    });
    expect(measure('{ queues { __typename name } }').complexity).toBe(20);
  });

  it('measures fragments spread twice at every level once each: 2^30 spreads at once, not 2^30 walks', () => {
    const fragments = (n: number): string =>
      Array.from(
        { length: n },
        (_, i) => `fragment F${i} on Query { queues { a${i}: name } ${i + 1 < n ? `...F${i + 1} ...F${i + 1}` : ''} }`,
      ).join(' ');
    // Each level: its queues (10 × (1 + 1)) and twice the next one's.
    expect(measure(`query { ...F0 } ${fragments(3)}`)).toEqual({ depth: 2, aliases: 1 + 2 + 4, complexity: 20 * 7 });
    const started = performance.now();
    expect(measure(`query { ...F0 } ${fragments(30)}`)).toEqual({
      depth: 2,
      aliases: 2 ** 30 - 1,
      complexity: 20 * (2 ** 30 - 1),
    });
    // Was minutes: the API's event loop held until the walk ended.
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
