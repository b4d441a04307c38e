import fc from 'fast-check';
import type { PickValue, WorldPool } from './fuzz-world';

/*
 * A JSON body as the fuzz builds it: plain values, and what JSON.stringify cannot write (numbers past a
 * double's range, -0, duplicate and `__proto__` keys, values of the world picked when the request is
 * sent), written out as text by writeJson.
 */

/** Written as is: `1e400`, `-0`, `18446744073709551616`, nesting 10,000 deep, a truncated value. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** An object as its keys were written: in order, duplicates and `__proto__` kept. */
export class JsonEntries {
  constructor(readonly entries: ReadonlyArray<readonly [string, JsonTree]>) {}
}

/** A value of the world's (a run id, a fencing token, a team), by its index in the pool when sent. */
export class WorldValue {
  constructor(
    readonly pool: WorldPool,
    readonly n: number,
  ) {}
}

/** A string with values of the world in it, each written as JSON writes it (a GraphQL query naming a run). */
export class JsonTemplate {
  constructor(readonly parts: ReadonlyArray<string | WorldValue>) {}
}

export type JsonTree =
  null | boolean | number | string | readonly JsonTree[] | RawJson | JsonEntries | WorldValue | JsonTemplate;

export function writeJson(tree: JsonTree, pick: PickValue): string {
  if (tree instanceof RawJson) return tree.text;
  if (tree instanceof WorldValue) return JSON.stringify(pick(tree.pool, tree.n));
  if (tree instanceof JsonTemplate)
    return JSON.stringify(
      tree.parts.map((part) => (part instanceof WorldValue ? JSON.stringify(pick(part.pool, part.n)) : part)).join(''),
    );
  if (tree instanceof JsonEntries)
    return `{${tree.entries.map(([key, value]) => `${JSON.stringify(key)}:${writeJson(value, pick)}`).join(',')}}`;
  if (Array.isArray(tree)) return `[${tree.map((item: JsonTree) => writeJson(item, pick)).join(',')}]`;
  return JSON.stringify(tree);
}

/** A plain value (fc.jsonValue's, an example of the OpenAPI document's) as a tree. */
export function treeOf(value: unknown): JsonTree {
  if (Array.isArray(value)) return value.map(treeOf);
  if (value !== null && typeof value === 'object')
    return new JsonEntries(Object.entries(value).map(([key, item]) => [key, treeOf(item)] as const));
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  return value as JsonTree;
}

/** One change to a tree, at its `at`-th node (pre-order, modulo the node count). */
export interface TreeChange {
  readonly at: number;
  /** replace the node; add a key to it (an object) or a value (an array); remove it; repeat one of its keys; wrap it. */
  readonly kind: 'replace' | 'add' | 'remove' | 'duplicate' | 'wrap';
  readonly key: string;
  readonly value: JsonTree;
}

export function treeChange(values: fc.Arbitrary<JsonTree>, keys: fc.Arbitrary<string>): fc.Arbitrary<TreeChange> {
  return fc.record({
    at: fc.nat(),
    kind: fc.constantFrom('replace', 'add', 'remove', 'duplicate', 'wrap'),
    key: keys,
    value: values,
  });
}

export function changeTree(tree: JsonTree, change: TreeChange): JsonTree {
  let next = change.at % countNodes(tree);
  const visit = (node: JsonTree): JsonTree | undefined => {
    if (next-- === 0) return applyAt(node, change);
    if (node instanceof JsonEntries)
      return new JsonEntries(
        node.entries.flatMap(([key, value]) => {
          const changed = visit(value);
          return changed === undefined ? [] : [[key, changed] as const];
        }),
      );
    if (Array.isArray(node))
      return node.flatMap((item: JsonTree) => {
        const changed = visit(item);
        return changed === undefined ? [] : [changed];
      });
    return node;
  };
  return visit(tree) ?? null;
}

/** The changed node; undefined: removed from its parent. */
function applyAt(node: JsonTree, change: TreeChange): JsonTree | undefined {
  switch (change.kind) {
    case 'replace':
      return change.value;
    case 'remove':
      return undefined;
    case 'wrap':
      return change.at % 2 === 0 ? [node] : new JsonEntries([[change.key, node]]);
    case 'add':
      if (node instanceof JsonEntries) return new JsonEntries([...node.entries, [change.key, change.value]]);
      if (Array.isArray(node)) return [...(node as JsonTree[]), change.value];
      return change.value;
    case 'duplicate': {
      if (!(node instanceof JsonEntries) || node.entries.length === 0) return node;
      const [key] = node.entries[change.at % node.entries.length]!;
      return new JsonEntries([...node.entries, [key, change.value]]);
    }
    default: {
      const never: never = change.kind;
      return never;
    }
  }
}

function countNodes(tree: JsonTree): number {
  if (tree instanceof JsonEntries) return 1 + tree.entries.reduce((n, [, value]) => n + countNodes(value), 0);
  if (Array.isArray(tree)) return 1 + tree.reduce((n: number, item: JsonTree) => n + countNodes(item), 0);
  return 1;
}
