import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { Submittable } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Queryable } from './pg-pool';

/** A connection COPY can stream through (a pg client, not a pool: COPY holds the connection). */
export interface CopyConnection extends Queryable {
  query<T extends Submittable>(queryStream: T): T;
}

/** A value COPY's text format takes: null for NULL; objects go in as JSON (json and jsonb columns). */
export type CopyValue = string | number | boolean | bigint | Date | null | object;

/**
 * Rows into `table`'s `columns` with COPY FROM STDIN (text format): the bulk load of a rebuild, many
 * times faster than INSERTs of the same rows, which the server parses from parameters or JSON.
 * `table` and `columns` are ours, never user input.
 */
export async function copyRows(
  db: CopyConnection,
  table: string,
  columns: readonly string[],
  rows: Iterable<readonly CopyValue[]>,
): Promise<void> {
  const stream = db.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  await pipeline(Readable.from(lines(rows), { objectMode: false }), stream);
}

/** The rows as text-format lines, in chunks of about 64 KiB. */
function* lines(rows: Iterable<readonly CopyValue[]>): Generator<string> {
  let chunk = '';
  for (const row of rows) {
    let line = field(row[0]!);
    for (let i = 1; i < row.length; i++) line += '\t' + field(row[i]!);
    chunk += line + '\n';
    if (chunk.length >= 65_536) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}

function field(value: CopyValue): string {
  if (value === null) return '\\N';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value instanceof Date) return isoTime(value);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  // Text format: backslash, tab, newline and carriage return escaped.
  return /[\\\t\n\r]/.test(text) ? text.replace(/[\\\t\n\r]/g, escape) : text;
}

/** ".000Z" to ".999Z": the milliseconds' ending of an ISO time. */
const MILLIS = Array.from({ length: 1000 }, (_, ms) => `.${String(ms).padStart(3, '0')}Z`);
/** The last second formatted, and which it was: a log's times come in runs of the same second. */
let second = { at: NaN, text: '' };

/**
 * `date.toISOString()`, the second's part reused while the times stay in it: a rebuild writes a
 * million of them, and toISOString costs half a microsecond each.
 */
export function isoTime(date: Date): string {
  const ms = date.getTime();
  const at = Math.floor(ms / 1000);
  if (at !== second.at || !Number.isFinite(ms)) {
    const text = date.toISOString(); // throws on an invalid date, as before
    second = { at, text: text.slice(0, -5) };
  }
  return second.text + MILLIS[ms - at * 1000]!;
}

function escape(c: string): string {
  return c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r';
}
