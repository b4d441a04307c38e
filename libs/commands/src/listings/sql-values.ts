/**
 * The values of a statement built from the filters given, so that each statement holds only those and
 * is planned for its index: `param(value)` adds a value and answers its placeholder (`$3`).
 */
export function sqlValues(first: readonly unknown[] = []): { values: unknown[]; param: (value: unknown) => string } {
  const values = [...first];
  return {
    values,
    param: (value) => {
      values.push(value);
      return `$${values.length}`;
    },
  };
}
