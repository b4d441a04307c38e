import { DomainError, pageSize } from '@chronicle/domain';

/** What a listing is asked for: how many, after which cursor, and the names the caller gave those two. */
export interface PageRequest {
  readonly after: string | null | undefined;
  readonly size: number | null | undefined;
  /** REST says `cursor` and `limit`, GraphQL `after` and `first`: refusals name the caller's own. */
  readonly names: { readonly after: string; readonly size: string };
}

/** A page of a listing: each item with the cursor that continues after it; nextCursor null on the last page. */
export interface Page<T> {
  readonly items: ReadonlyArray<{ readonly node: T; readonly cursor: string }>;
  readonly nextCursor: string | null;
  /** The servers of runs not reached for this page, and their shards: their runs are not in it (docs/sharding.md). */
  readonly unavailable?: readonly UnavailableShards[];
}

/** A server of runs that did not answer, and the shards it keeps. */
export interface UnavailableShards {
  readonly server: string;
  readonly shards: readonly number[];
}

/**
 * Cursors are opaque to clients: the listing's key of an item (`[dueAt, runId]`, `[name]`), as
 * base64url JSON. Keyset paging: the next page starts strictly after the key, so items that change
 * while a client pages are neither repeated nor skipped.
 */
export function encodeCursor(key: readonly string[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** The key of a cursor this API gave, or a validation-error naming the parameter. */
export function decodeCursor(value: string, arity: number, field: string): string[] {
  try {
    const key = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(key) && key.length === arity && key.every((part) => typeof part === 'string'))
      return key as string[];
  } catch {
    // refused below
  }
  throw notACursor(field);
}

/** A `[time, id]` key (runs by due time, dead letters by death). */
/**
 * A time listing's cursor: the time as the listings write it (toISOString, UTC to the millisecond) and
 * an id. Anything else is refused here: JavaScript parses strings PostgreSQL does not (`"2764"`, a year),
 * which would reach the query and fail there.
 */
export function decodeTimeCursor(value: string, field: string): { time: string; id: string } {
  const [time, id] = decodeCursor(value, 2, field) as [string, string];
  if (!ISO_UTC_MILLISECONDS.test(time) || Number.isNaN(Date.parse(time))) throw notACursor(field);
  return { time, id };
}

const ISO_UTC_MILLISECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function notACursor(field: string): DomainError {
  return new DomainError('validation-error', `${field} is not a cursor this listing returned`, { field });
}

/** The page size asked for, checked; the rows to read are one more, to know whether a next page exists. */
export function sizeOf(page: PageRequest): number {
  return pageSize(page.size, page.names.size);
}

/** The first `size` of the rows read (size + 1 of them), each with its cursor, and the next page's cursor. */
export function pageOf<T>(rows: readonly T[], size: number, keyOf: (row: T) => readonly string[]): Page<T> {
  const items = rows.slice(0, size).map((node) => ({ node, cursor: encodeCursor(keyOf(node)) }));
  return { items, nextCursor: rows.length > size ? items[items.length - 1]!.cursor : null };
}

/** `page`, saying which servers of runs it lacks when there are any. */
export function withUnavailable<T>(page: Page<T>, unavailable: readonly UnavailableShards[]): Page<T> {
  return unavailable.length === 0 ? page : { ...page, unavailable };
}
