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
