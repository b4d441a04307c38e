import type { Type } from '@nestjs/common';
import { Field, ObjectType } from '@nestjs/graphql';
import type { Page } from '@chronicle/commands';

@ObjectType({ description: 'Where a page of a connection ends, and whether another follows.' })
export class PageInfo {
  @Field()
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true, description: "The last edge's cursor: pass it as `after` for the next page." })
  endCursor!: string | null;
}

/** A connection's value (Relay's shape): each item as an edge with its cursor, and the page's end. */
export interface Connection<Node> {
  readonly edges: ReadonlyArray<{ readonly cursor: string; readonly node: Node }>;
  readonly pageInfo: PageInfo;
}

export function connectionOf<T, Node>(page: Page<T>, nodeOf: (item: T) => Node): Connection<Node> {
  const edges = page.items.map(({ node, cursor }) => ({ cursor, node: nodeOf(node) }));
  return {
    edges,
    pageInfo: { hasNextPage: page.nextCursor !== null, endCursor: edges[edges.length - 1]?.cursor ?? null },
  };
}

/**
 * The GraphQL types of a connection of `node`: `<Name>Edge { cursor node }` and the base of
 * `<Name>Connection { edges pageInfo }` (declare `@ObjectType() class <Name>Connection extends ConnectionOf(…)`).
 */
export function ConnectionOf<Node>(node: Type<Node>, name: string): Type<Connection<Node>> {
  @ObjectType(`${name}Edge`)
  class Edge {
    @Field() cursor!: string;
    @Field(() => node) node!: Node;
  }

  @ObjectType({ isAbstract: true })
  abstract class Base implements Connection<Node> {
    @Field(() => [Edge]) edges!: Edge[];
    @Field(() => PageInfo) pageInfo!: PageInfo;
  }
  return Base as unknown as Type<Connection<Node>>;
}

/** GraphQL passes an argument given as `null` as null; to the queries, as to REST, it is not given. */
export function given<T>(value: T | null | undefined): T | undefined {
  return value ?? undefined;
}

/** The fields of a filter input given a value (`{team: null}` filters on nothing). */
export function givenFields<T extends object>(input: T | null | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(input ?? {}).filter(([, value]) => value != null)) as Partial<T>;
}
