import { type Queryable, SQLSTATE, sqlStateOf } from '@chronicle/platform';
import type { PreparedAppend } from '../append-validation';
import { withMetadataColumns } from './metadata-columns';
import { streamKey } from './stream-key';
import { InvalidAppendError, WrongExpectedRevisionError } from '../event-store.errors';
import type { AppendResult, ExpectedRevision, ReadModelWrite } from '../event-store.port';

interface AppendRow {
  r_stream: string;
  r_revision: string;
  r_commit: string;
  r_position: string;
}

const EXPECTED_CODE: Record<Exclude<ExpectedRevision, bigint>, bigint> = {
  no_stream: -1n,
  any: -2n,
  stream_exists: -3n,
  new_stream: -4n,
};

const APPEND_SQL = 'SELECT * FROM es_append($1::text[], $2::bytea[], $3::bigint[], $4::uuid[], $5::json)';
const APPEND_PARAMETERS = 5;

/**
 * One round trip for the whole append, however many streams and events:
 * es_append (migrations/0001) locks the streams, checks every expected
 * revision, recognises a retry of an append that committed, and inserts,
 * atomically. Run inside a caller's transaction it must come before the
 * transaction's first write (see the function's comment).
 *
 * With `writeThrough`, the read models' write goes in the same statement, as
 * a data-modifying WITH that PostgreSQL runs after the append's SELECT (an
 * error in es_append fails both): the log and its rows in one round trip.
 */
export async function appendEvents(
  db: Queryable,
  appends: readonly PreparedAppend[],
  writeThrough?: ReadModelWrite,
): Promise<AppendResult[]> {
  const streams = appends.map((a) => a.streamId);
  const keys = streams.map(streamKey);
  const expected = appends.map((a) =>
    (typeof a.expected === 'bigint' ? a.expected : EXPECTED_CODE[a.expected]).toString(),
  );
  const lastIds = appends.map((a) => a.events[a.events.length - 1]!.id);
  const events = JSON.stringify(
    appends.flatMap((a, i) =>
      a.events.map((e, n) => withMetadataColumns({ s: i + 1, n, id: e.id, type: e.type, data: e.data }, e.metadata)),
    ),
  );
  let rows: AppendRow[];
  try {
    // Named: prepared once per connection, not parsed on every append.
    ({ rows } = await db.query<AppendRow>(withWriteThrough([streams, keys, expected, lastIds, events], writeThrough)));
  } catch (err) {
    throw translateAppendError(err, appends);
  }
  const byStream = new Map(rows.map((r) => [r.r_stream, r]));
  return appends.map(({ streamId }) => {
    const row = byStream.get(streamId);
    if (row === undefined) throw new Error(`es_append returned no result for stream ${streamId}`);
    return {
      streamId,
      nextRevision: BigInt(row.r_revision),
      position: { commit: BigInt(row.r_commit), prepare: BigInt(row.r_position) },
    };
  });
}

/** The append's statement, alone or with the write that goes with it. */
function withWriteThrough(
  values: unknown[],
  writeThrough: ReadModelWrite | undefined,
): { name?: string; text: string; values: unknown[] } {
  if (writeThrough === undefined) return { name: 'es_append', text: APPEND_SQL, values };
  const { name } = writeThrough;
  return {
    ...(name === undefined ? {} : { name: `es_append+${name}` }),
    text: name === undefined ? appendWithWrite(writeThrough.text) : combinedText(name, writeThrough.text),
    values: [...values, ...writeThrough.values],
  };
}

/** The combined text of each named write, made once: a named write's text is the same at every call. */
const combined = new Map<string, string>();

function combinedText(name: string, write: string): string {
  let text = combined.get(name);
  if (text === undefined) combined.set(name, (text = appendWithWrite(write)));
  return text;
}

/** The append and `write` as one statement: the write's $n follow the append's five, its WITH list joins the append's. */
function appendWithWrite(write: string): string {
  const renumbered = write.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + APPEND_PARAMETERS}`);
  // A data-modifying WITH must be at the top level.
  const { ctes, main } = splitWith(renumbered);
  return `WITH appended AS MATERIALIZED (${APPEND_SQL}), ${ctes === '' ? '' : `${ctes}, `}written AS (${main}) SELECT * FROM appended`;
}

/**
 * `WITH a AS (...), b AS (...) main` -> its WITH list and its main statement (a statement without
 * WITH: no list). Parentheses are counted, so the statements must not hold unbalanced ones in
 * literals: they are ours, with every value a parameter.
 */
export function splitWith(sql: string): { ctes: string; main: string } {
  const text = sql.trim();
  if (!/^WITH\s/i.test(text)) return { ctes: '', main: text };
  let depth = 0;
  for (let i = 4; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') {
      depth--;
      if (depth === 0) {
        const rest = text.slice(i + 1);
        const next = /^\s*,/.exec(rest);
        if (next !== null) {
          i += next[0].length;
          continue;
        }
        if (rest.trim() === '') break;
        return { ctes: text.slice(4, i + 1).trim(), main: rest.trim() };
      }
    }
  }
  throw new Error('a WITH statement without a main statement');
}

function translateAppendError(err: unknown, appends: readonly PreparedAppend[]): unknown {
  switch (sqlStateOf(err)) {
    case SQLSTATE.wrongExpectedRevision: {
      const detail = JSON.parse((err as { detail?: string }).detail ?? '{}') as {
        stream?: string;
        actual?: number | null;
      };
      const failed = appends.find((a) => a.streamId === detail.stream) ?? appends[0];
      const actual =
        detail.actual === undefined ? undefined : detail.actual === null ? 'no_stream' : BigInt(detail.actual);
      return new WrongExpectedRevisionError(failed?.streamId ?? '', failed?.expected ?? 'any', actual);
    }
    case SQLSTATE.uniqueViolation:
      // Only reachable if something wrote to events without es_append's lock.
      return new WrongExpectedRevisionError(appends[0]?.streamId ?? '', appends[0]?.expected ?? 'any', undefined);
    case SQLSTATE.untranslatableCharacter:
    case SQLSTATE.invalidTextRepresentation:
    case SQLSTATE.programLimitExceeded:
      return new InvalidAppendError(`event data cannot be stored: ${(err as Error).message}`);
    default:
      return err;
  }
}
