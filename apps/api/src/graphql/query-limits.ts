import type { ApolloDriverConfig } from '@nestjs/apollo';
import {
  getNamedType,
  getNullableType,
  GraphQLError,
  isListType,
  isObjectType,
  isInterfaceType,
  Kind,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { DEFAULT_PAGE_SIZE } from '@chronicle/domain';

/**
 * How big a query may be. Depth counts nested fields (`runs { edges { node { events { type } } } }` is
 * 5); aliases count every aliased field; complexity estimates the work: each field costs 1, times the
 * items of the list it is in (a connection's `first`, 50 unless given; `count`; 10 for other lists).
 * `runs(first: 500)` with each run's events is about 22,500. Introspection (`__schema`, `__type`) is
 * not counted: GRAPHQL_INTROSPECTION turns it off.
 */
export const QUERY_LIMITS = { depth: 10, aliases: 20, complexity: 25_000 } as const;

/** An unsized list's items, for the estimate (a run's events, a run's attempts, the queues). */
const LIST_ESTIMATE = 10;
/** Arguments that say how many items a field answers with. */
const SIZE_ARGUMENTS: Readonly<Record<string, number>> = { first: DEFAULT_PAGE_SIZE, count: 10 };

export interface QueryMeasure {
  readonly depth: number;
  readonly aliases: number;
  readonly complexity: number;
}

/** Refuses an operation over the limits before it runs: a validation-error naming the limit. */
/** An Apollo Server plugin, typed as @nestjs/apollo takes it (its @apollo/server types are the ES module's). */
export type ApolloPlugin = NonNullable<ApolloDriverConfig['plugins']>[number];

export function queryLimitsPlugin(limits: typeof QUERY_LIMITS = QUERY_LIMITS): ApolloPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, document, request, schema }) {
          if (operation === undefined) return;
          const fragments = new Map(
            document.definitions
              .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
              .map((d) => [d.name.value, d]),
          );
          const measure = measureOperation(schema, operation, fragments, request.variables ?? {});
          for (const limit of ['depth', 'aliases', 'complexity'] as const)
            if (measure[limit] > limits[limit])
              throw new GraphQLError(
                `the query's ${limit === 'aliases' ? 'alias count' : limit} is ${measure[limit]}, over the limit of ${limits[limit]}`,
                { extensions: { limit, max: limits[limit], actual: measure[limit], http: { status: 400 } } },
              );
        },
      };
    },
  };
}

export function measureOperation(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Readonly<Record<string, unknown>>,
): QueryMeasure {
  let aliases = 0;
  const root =
    operation.operation === 'query'
      ? schema.getQueryType()
      : operation.operation === 'mutation'
        ? schema.getMutationType()
        : schema.getSubscriptionType();

  /** Depth and cost of a selection set on `type`; fragments are walked where they are spread. */
  const walk = (selections: SelectionSetNode, type: GraphQLNamedType | null | undefined): [number, number] => {
    let depth = 0;
    let cost = 0;
    for (const selection of selections.selections) {
      let inner: [number, number];
      if (selection.kind === Kind.FIELD) inner = field(selection, type);
      else if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        if (fragment === undefined) continue;
        inner = spread(fragment);
      } else {
        const condition =
          selection.typeCondition === undefined ? type : schema.getType(selection.typeCondition.name.value);
        inner = walk(selection.selectionSet, condition);
      }
      depth = Math.max(depth, inner[0]);
      cost += inner[1];
    }
    return [depth, cost];
  };

  /**
   * A named fragment's measure, walked the first time it is spread only: a fragment spread twice at every
   * level of 30 was walked 2^30 times, holding the event loop for good. Each spread counts its aliases.
   */
  const measured = new Map<FragmentDefinitionNode, { depth: number; cost: number; aliases: number }>();
  const spread = (fragment: FragmentDefinitionNode): [number, number] => {
    let known = measured.get(fragment);
    if (known === undefined) {
      const before = aliases;
      const [depth, cost] = walk(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value));
      known = { depth, cost, aliases: aliases - before };
      measured.set(fragment, known);
    } else aliases += known.aliases;
    return [known.depth, known.cost];
  };

  const field = (node: FieldNode, parent: GraphQLNamedType | null | undefined): [number, number] => {
    if (node.name.value.startsWith('__')) return [0, 0];
    if (node.alias !== undefined) aliases += 1;
    const definition =
      isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[node.name.value] : undefined;
    const [depth, cost] =
      node.selectionSet === undefined ? [0, 0] : walk(node.selectionSet, definition && getNamedType(definition.type));
    return [depth + 1, itemsOf(node, definition?.type) * (1 + cost)];
  };

  const itemsOf = (node: FieldNode, type: GraphQLOutputType | undefined): number => {
    if (node.name.value === 'edges') return 1; // sized by its connection
    for (const [name, fallback] of Object.entries(SIZE_ARGUMENTS)) {
      const argument = node.arguments?.find((a) => a.name.value === name);
      if (argument !== undefined) return sizeOf(argument.value, variables) ?? fallback;
    }
    if (type === undefined) return 1;
    if (getNamedType(type).name.endsWith('Connection')) return DEFAULT_PAGE_SIZE; // a page, even without `first`
    return isListType(getNullableType(type)) ? LIST_ESTIMATE : 1;
  };

  const [depth, complexity] = root === null || root === undefined ? [0, 0] : walk(operation.selectionSet, root);
  return { depth, aliases, complexity };
}

function sizeOf(value: ValueNode, variables: Readonly<Record<string, unknown>>): number | undefined {
  if (value.kind === Kind.INT) return Math.max(0, Number(value.value));
  if (value.kind === Kind.VARIABLE) {
    const given = variables[value.name.value];
    return typeof given === 'number' ? Math.max(0, given) : undefined;
  }
  return undefined;
}
