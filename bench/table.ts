/** A plain-text table: the first column left-aligned, the others right-aligned, a rule under the header. */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  const lines = rows.map((row) =>
    row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '),
  );
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  return lines.join('\n') + '\n';
}

export const formatCount = (n: number | undefined): string =>
  n === undefined ? '' : Math.round(n).toLocaleString('en-US');

/** The value at quantile q (0..1) of unsorted numbers, nearest-rank. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
}

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}
