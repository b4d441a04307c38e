/**
 * Constants as an SQL list of literals, `'scheduled', 'retry_wait'`, for IN
 * lists written from the domain's constants: a partial index is used only
 * when the query's predicate matches its own, so these stay literals rather
 * than parameters. Never for input.
 */
export function sqlList(values: readonly string[]): string {
  return values.map((v) => `'${v.replace(/'/g, "''")}'`).join(', ');
}
