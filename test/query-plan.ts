import type { Queryable } from '@chronicle/platform';

/** A node of PostgreSQL's plan, as EXPLAIN (FORMAT JSON) gives it. */
export interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Index Name'?: string;
  readonly 'Index Cond'?: string;
  readonly 'Relation Name'?: string;
  readonly 'Plan Rows'?: number;
  readonly 'Actual Rows'?: number;
  readonly 'Actual Loops'?: number;
  readonly 'Shared Hit Blocks'?: number;
  readonly 'Shared Read Blocks'?: number;
  readonly Plans?: readonly PlanNode[];
}

/**
 * The plan PostgreSQL picks for `query` (not run; with `analyze`, run, and its actual rows counted;
 * with `buffers` too, the pages it touched): its root.
 */
export async function queryPlan(
  db: Queryable,
  query: { readonly text: string; readonly values: unknown[] },
  options: { readonly analyze?: boolean; readonly buffers?: boolean } = {},
): Promise<PlanNode> {
  const analyze = options.analyze === true || options.buffers === true;
  const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>({
    text: `EXPLAIN (${analyze ? 'ANALYZE, ' : ''}${options.buffers === true ? 'BUFFERS, ' : ''}FORMAT JSON) ${query.text}`,
    values: query.values,
  });
  return rows[0]!['QUERY PLAN'][0].Plan;
}

/** The plan's nodes, depth first. */
export function planNodes(root: PlanNode): PlanNode[] {
  return [root, ...(root.Plans ?? []).flatMap(planNodes)];
}
