/** One field a new version of a job's definition changed: its path (`retry.maxAttempts`), before and after. */
export interface FieldChange {
  readonly field: string;
  /** undefined: the field was not there. */
  readonly before?: unknown;
  readonly after?: unknown;
}

/**
 * What changed from one definition to the next, field by field, in the order of the fields: objects
 * are compared key by key (nested keys as dotted paths), anything else (arrays included) as a whole.
 */
export function diffDefinitions(before: unknown, after: unknown, prefix = ''): FieldChange[] {
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    return keys.flatMap((key) => diffDefinitions(before[key], after[key], prefix === '' ? key : `${prefix}.${key}`));
  }
  if (sameValue(before, after)) return [];
  return [
    {
      field: prefix,
      ...(before === undefined ? {} : { before }),
      ...(after === undefined ? {} : { after }),
    },
  ];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON values, as definitions are: equal when their JSON is (key order aside, which objects above handle). */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  if (isObject(a) && isObject(b)) return diffDefinitions(a, b).length === 0;
  return false;
}
