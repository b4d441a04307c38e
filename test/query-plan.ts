import type { Queryable } from '@chronicle/platform';

/** A node of PostgreSQL's plan, as EXPLAIN (FORMAT JSON) gives it. */
export interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Index Name'?: string;
  readonly 'Index Cond'?: string;
  readonly 'Relation Name'?: string;
  readonly 'Plan Rows'?: number;
  readonly 'Actual Rows'?: number;
  readonly Plans?: readonly PlanNode[];
}

/** The plan PostgreSQL picks for `query` (not run; with `analyze`, run, and its actual rows counted): its root. */
export async function queryPlan(
  db: Queryable,
  query: { readonly text: string; readonly values: unknown[] },
  options: { readonly analyze?: boolean } = {},
): Promise<PlanNode> {
  const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>({
    text: `EXPLAIN (${options.analyze === true ? 'ANALYZE, ' : ''}FORMAT JSON) ${query.text}`,
    values: query.values,
  });
  return rows[0]!['QUERY PLAN'][0].Plan;
}

/** The plan's nodes, depth first. */
export function planNodes(root: PlanNode): PlanNode[] {
  return [root, ...(root.Plans ?? []).flatMap(planNodes)];
}
