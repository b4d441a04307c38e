import type { Pool, PoolClient } from 'pg';
import type { Queryable } from '@chronicle/platform';

/** The schema the read models live in: the one the migrations create them in. */
export const LIVE_SCHEMA = 'public';

/** A schema name of ours from a free text (a projection's name): lower case letters, digits, underscores. */
export function schemaName(prefix: string, name: string): string {
  return `${prefix}_${name.toLowerCase().replace(/[^a-z0-9]+/g, '_')}`;
}

/**
 * Empty copies of the live tables in a schema of their own, created afresh:
 * columns, defaults, generated columns, constraints, indexes (LIKE ...
 * INCLUDING ALL) and the storage settings LIKE leaves out (the hot tables'
 * autovacuum settings), so that the copy can take the live table's place.
 * `unlogged` for copies that never will (a verification's, dropped after
 * the comparison): no WAL for their rows.
 */
export async function createShadowTables(
  db: Queryable,
  schema: string,
  tables: readonly string[],
  unlogged = false,
): Promise<void> {
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.query(`CREATE SCHEMA ${schema}`);
  const kind = unlogged ? 'UNLOGGED ' : '';
  for (const table of tables) {
    const partitioning = await partitioningOf(db, table);
    // The key and unique constraints now (upserts need them), the other indexes once the rows are in.
    // A partitioned table holds no rows itself (and PostgreSQL 18 refuses to call one unlogged): its partitions are.
    await db.query(
      partitioning === undefined
        ? `CREATE ${kind}TABLE ${schema}.${table} (LIKE ${LIVE_SCHEMA}.${table} INCLUDING ALL EXCLUDING INDEXES)`
        : `CREATE TABLE ${schema}.${table} (LIKE ${LIVE_SCHEMA}.${table} INCLUDING ALL EXCLUDING INDEXES) PARTITION BY ${partitioning.key}`,
    );
    // A partitioned table's partitions, by the same names and bounds (the scheduler's retention pass finds them so).
    for (const partition of partitioning?.partitions ?? [])
      await db.query(
        `CREATE ${kind}TABLE ${schema}.${partition.name} PARTITION OF ${schema}.${table} ${partition.bound}`,
      );
    for (const statement of await indexStatements(db, table, `${schema}.${table}`, true)) await db.query(statement);
    for (const name of [table, ...(partitioning?.partitions ?? []).map((p) => p.name)]) {
      const { rows } = await db.query<{ options: string[] | null }>(
        'SELECT reloptions AS options FROM pg_class WHERE oid = $1::regclass',
        [`${LIVE_SCHEMA}.${name}`],
      );
      const options = rows[0]?.options ?? [];
      if (options.length > 0) await db.query(`ALTER TABLE ${schema}.${name} SET (${options.join(', ')})`);
    }
  }
}

/** A live table's partition key and partitions (migrations/0018), or undefined for a plain table. */
async function partitioningOf(
  db: Queryable,
  table: string,
): Promise<{ key: string; partitions: Array<{ name: string; bound: string }> } | undefined> {
  const { rows } = await db.query<{ key: string | null; name: string | null; bound: string | null }>(
    `SELECT pg_get_partkeydef(p.oid) AS key, c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_class p LEFT JOIN pg_inherits i ON i.inhparent = p.oid LEFT JOIN pg_class c ON c.oid = i.inhrelid
      WHERE p.oid = $1::regclass AND p.relkind = 'p'
      ORDER BY c.relname`,
    [`${LIVE_SCHEMA}.${table}`],
  );
  if (rows.length === 0) return undefined;
  return {
    key: rows[0]!.key!,
    partitions: rows.filter((r) => r.name !== null).map((r) => ({ name: r.name!, bound: r.bound! })),
  };
}

/** The partitions of a table in `schema`: moved between schemas with it, since a table's move leaves them. */
async function partitionsIn(db: Queryable, schema: string, table: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1) ORDER BY c.relname`,
    [`${schema}.${table}`],
  );
  return rows.map((r) => r.name);
}

/** Empty scratch copies of live tables in `schema`, for what a projection writes besides its own tables. */
export async function createScratchTables(db: Queryable, schema: string, tables: readonly string[]): Promise<void> {
  for (const table of tables)
    await db.query(`CREATE UNLOGGED TABLE ${schema}.${table} (LIKE ${LIVE_SCHEMA}.${table} INCLUDING ALL)`);
}

/**
 * The statements that give `shadow` the live table's indexes, with the live names (index names are
 * per schema): those behind its key and unique constraints, or the others.
 */
async function indexStatements(db: Queryable, table: string, shadow: string, constraints: boolean): Promise<string[]> {
  const { rows } = await db.query<{ constraint: string | null; definition: string; partitioned: boolean }>(
    `SELECT c.conname AS constraint, (SELECT relkind = 'p' FROM pg_class WHERE oid = i.indrelid) AS partitioned,
            CASE WHEN c.conname IS NULL THEN pg_get_indexdef(i.indexrelid) ELSE pg_get_constraintdef(c.oid) END AS definition
       FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
      WHERE i.indrelid = $1::regclass AND (c.conname IS NOT NULL) = $2`,
    [`${LIVE_SCHEMA}.${table}`, constraints],
  );
  return rows.map(({ constraint, definition, partitioned }) => {
    // ONLY: not on the tables that inherit from it; a partitioned table's key is its partitions' too.
    if (constraint !== null)
      return `ALTER TABLE ${partitioned ? '' : 'ONLY '}${shadow} ADD CONSTRAINT ${quoteIdent(constraint)} ${definition}`;
    // A partitioned table's index is its own and its partitions' (ON ONLY: created on it alone, then attached).
    const on = partitioned ? ` ON ONLY ${LIVE_SCHEMA}.${table} ` : ` ON ${LIVE_SCHEMA}.${table} `;
    if (!definition.includes(on)) throw new Error(`index of ${table} not understood: ${definition}`);
    return definition.replace(on, ` ON ${shadow} `);
  });
}

/** The live tables' other indexes on the shadow ones, built in bulk once the rows are in. */
export async function indexShadowTables(db: Queryable, schema: string, tables: readonly string[]): Promise<void> {
  for (const table of tables)
    for (const statement of await indexStatements(db, table, `${schema}.${table}`, false)) await db.query(statement);
}

export async function dropSchema(db: Queryable, schema: string): Promise<void> {
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

/**
 * `work` in a transaction whose unqualified table names are `schema`'s
 * first: a projection's own statements then write its shadow tables. Its
 * prepared statements are planned again for that search path (PostgreSQL
 * re-plans a prepared statement whose search path changed).
 */
export async function inSchema<T>(pool: Pool, schema: string, work: (tx: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // A shadow is rebuilt from the log if lost: no need to wait for each batch's flush.
    await client.query(`SET LOCAL search_path TO ${schema}, ${LIVE_SCHEMA}; SET LOCAL synchronous_commit = off`);
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Swaps the shadow tables in, in the caller's transaction: the live tables
 * (locked ACCESS EXCLUSIVE by the caller) move to `retired`, the shadow
 * ones to the live schema. Statements waiting for the live tables' locks
 * look their names up again once granted, so they go on with the new ones.
 */
export async function swapTables(
  tx: Queryable,
  shadow: string,
  retired: string,
  tables: readonly string[],
): Promise<void> {
  await tx.query(`DROP SCHEMA IF EXISTS ${retired} CASCADE`);
  await tx.query(`CREATE SCHEMA ${retired}`);
  // Every live table out first: a shadow partition has its live namesake's name.
  const shadows: string[] = [];
  for (const table of tables) {
    const live = await partitionsIn(tx, LIVE_SCHEMA, table);
    shadows.push(table, ...(await partitionsIn(tx, shadow, table)));
    for (const name of [table, ...live]) await tx.query(`ALTER TABLE ${LIVE_SCHEMA}.${name} SET SCHEMA ${retired}`);
  }
  for (const name of shadows) await tx.query(`ALTER TABLE ${shadow}.${name} SET SCHEMA ${LIVE_SCHEMA}`);
}

/** Takes the live tables' ACCESS EXCLUSIVE locks, waiting at most `timeoutMs` (then lock_not_available). */
export async function lockLiveTables(tx: Queryable, tables: readonly string[], timeoutMs: number): Promise<void> {
  await tx.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
  await tx.query(`LOCK TABLE ${tables.map((t) => `${LIVE_SCHEMA}.${t}`).join(', ')} IN ACCESS EXCLUSIVE MODE`);
  await tx.query('SET LOCAL lock_timeout = 0');
}

/** A table's columns, and which of them are its primary key. */
async function columnsOf(db: Queryable, table: string): Promise<Array<{ name: string; key: boolean }>> {
  const { rows } = await db.query<{ name: string; key: boolean }>(
    `SELECT a.attname AS name, coalesce(a.attnum = ANY(i.indkey), false) AS key
       FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
      WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
      ORDER BY a.attnum`,
    [`${LIVE_SCHEMA}.${table}`],
  );
  return rows;
}

/**
 * Copies into the shadow table the live rows that are newer than it (a
 * projection's tables written through by commands, see
 * Projection.writtenThrough): by primary key, a row the shadow lacks, or
 * one at a higher `revision`; a table without a primary key (append-only)
 * gets the live rows it lacks. `since`: only live rows written at or after
 * it (`updated_at`), where the table has that column. Resolves with the
 * rows copied.
 */
export async function overlayLiveRows(db: Queryable, schema: string, table: string, since?: Date): Promise<number> {
  const columns = await columnsOf(db, table);
  const names = columns.map((c) => quoteIdent(c.name));
  const keys = columns.filter((c) => c.key).map((c) => quoteIdent(c.name));
  const [live, shadow] = [`${LIVE_SCHEMA}.${table}`, `${schema}.${table}`];
  const list = names.join(', ');
  const recent = since !== undefined && columns.some((c) => c.name === 'updated_at') ? 'l.updated_at >= $1' : 'true';
  const values = recent === 'true' ? [] : [since];
  if (keys.length === 0) {
    const { rowCount } = await db.query(
      `INSERT INTO ${shadow} (${list}) SELECT ${list} FROM ${live} l WHERE ${recent} EXCEPT ALL SELECT ${list} FROM ${shadow}`,
      values,
    );
    return rowCount ?? 0;
  }
  const revised = columns.some((c) => c.name === 'revision');
  const placed = await partitionColumnsOf(db, table);
  if (placed.length > 0) {
    // A run's row moves between partitions: the key holds where it is, so a row is known by the rest of it. The
    // shadow's rows that a live one supersedes (older, or elsewhere for a table without revisions) make way.
    const known = keys.filter((k) => !placed.includes(k));
    const same = known.map((k) => `s.${k} = l.${k}`).join(' AND ');
    const superseded = revised ? 's.revision < l.revision' : placed.map((c) => `s.${c} <> l.${c}`).join(' OR ');
    await db.query(`DELETE FROM ${shadow} s USING ${live} l WHERE ${recent} AND ${same} AND (${superseded})`, values);
    const { rowCount } = await db.query(
      `INSERT INTO ${shadow} (${list}) SELECT ${list.replace(/"([^"]+)"/g, 'l."$1"')} FROM ${live} l
        WHERE ${recent} AND NOT EXISTS (SELECT 1 FROM ${shadow} s WHERE ${same})`,
      values,
    );
    return rowCount ?? 0;
  }
  const matches = keys.map((k) => `s.${k} = l.${k}`).join(' AND ');
  const newer = revised ? `s.revision >= l.revision` : 'true';
  const update = names
    .filter((n) => !keys.includes(n))
    .map((n) => `${n} = EXCLUDED.${n}`)
    .join(', ');
  const { rowCount } = await db.query(
    `INSERT INTO ${shadow} AS s (${list})
     SELECT ${list.replace(/"([^"]+)"/g, 'l."$1"')} FROM ${live} l
      WHERE ${recent} AND NOT EXISTS (SELECT 1 FROM ${shadow} s WHERE ${matches} AND ${newer})
     ON CONFLICT (${keys.join(', ')}) DO ${revised ? `UPDATE SET ${update} WHERE s.revision < EXCLUDED.revision` : 'NOTHING'}`,
    values,
  );
  return rowCount ?? 0;
}

/** The columns of a live table's partition key (quoted), none for a plain table. */
async function partitionColumnsOf(db: Queryable, table: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT a.attname AS name FROM pg_partitioned_table p
       JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = ANY(p.partattrs::int2[])
      WHERE p.partrelid = $1::regclass`,
    [`${LIVE_SCHEMA}.${table}`],
  );
  return rows.map((r) => quoteIdent(r.name));
}

/** A row of a table that differs between the live schema and a rebuilt one. */
export interface RowDifference {
  readonly table: string;
  /** The row's key (its primary key's columns, or the whole row for a table without one), as JSON. */
  readonly key: string;
  readonly kind: 'missing' | 'unexpected' | 'different';
}

/** Columns that say when a row was written, not what it holds: not compared. */
const WRITE_TIME_COLUMNS = new Set(['updated_at']);

/**
 * The rows of `table` that differ between the live schema and `schema`,
 * by primary key (`missing`: only in the rebuilt one, that is absent from
 * the live table; `unexpected`: only live; `different`: both, other
 * values), write times and partition keys left out. A table without a primary key is compared
 * as a multiset of whole rows. At most `limit` differences.
 */
export async function diffTable(db: Queryable, schema: string, table: string, limit: number): Promise<RowDifference[]> {
  const live = `${LIVE_SCHEMA}.${table}`;
  // Generated columns are left out: they follow from the others.
  const columns = await columnsOf(db, table);
  // Where a row is kept (its partition: a run's due day, or runs_kept once retention kept it past that day,
  // migrations/0025) is not what it holds: a rebuild files every run under its due day.
  const placed = await partitionColumnsOf(db, table);
  const compared = columns
    .filter((c) => !WRITE_TIME_COLUMNS.has(c.name))
    .map((c) => quoteIdent(c.name))
    .filter((c) => !placed.includes(c));
  const keys = columns
    .filter((c) => c.key)
    .map((c) => quoteIdent(c.name))
    .filter((c) => !placed.includes(c));
  const shadow = `${schema}.${table}`;
  const list = compared.join(', ');
  if (keys.length === 0) {
    const { rows } = await db.query<{ key: string; kind: RowDifference['kind'] }>(
      `(SELECT row_to_json(x)::text AS key, 'missing' AS kind FROM (SELECT ${list} FROM ${shadow} EXCEPT ALL SELECT ${list} FROM ${live}) x)
       UNION ALL
       (SELECT row_to_json(x)::text, 'unexpected' FROM (SELECT ${list} FROM ${live} EXCEPT ALL SELECT ${list} FROM ${shadow}) x)
       LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ table, ...r }));
  }
  const keyOf = (alias: string): string =>
    `jsonb_build_object(${keys.map((k) => `'${k.replace(/"/g, '')}', ${alias}.${k}`).join(', ')})::text`;
  const rowOf = (alias: string): string => `ROW(${compared.map((c) => `${alias}.${c}`).join(', ')})`;
  const { rows } = await db.query<{ key: string; kind: RowDifference['kind'] }>(
    `SELECT CASE WHEN l.${keys[0]} IS NULL THEN ${keyOf('s')} ELSE ${keyOf('l')} END AS key,
            CASE WHEN l.${keys[0]} IS NULL THEN 'missing' WHEN s.${keys[0]} IS NULL THEN 'unexpected' ELSE 'different' END AS kind
       FROM ${live} l FULL JOIN ${shadow} s ON ${keys.map((k) => `l.${k} = s.${k}`).join(' AND ')}
      WHERE l.${keys[0]} IS NULL OR s.${keys[0]} IS NULL OR ${rowOf('l')} IS DISTINCT FROM ${rowOf('s')}
      LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({ table, key: r.key, kind: r.kind }));
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
