/**
 * The answers of every run server (docs/sharding.md) as one list with one row per key: the rows of a key
 * several servers answered are combined with `add` (their counts summed). Each server's answer comes
 * from the same GROUP BY, so it holds a key once: with one server (no shard map) its rows come out as
 * they are, in their order. Keys come in the order they are first met.
 */
export function addUpPerKey<T>(
  answers: ReadonlyArray<readonly T[]>,
  keyOf: (row: T) => string | number,
  add: (a: T, b: T) => T,
): T[] {
  const byKey = new Map<string | number, T>();
  for (const rows of answers)
    for (const row of rows) {
      const key = keyOf(row);
      const before = byKey.get(key);
      byKey.set(key, before === undefined ? row : add(before, row));
    }
  return [...byKey.values()];
}
