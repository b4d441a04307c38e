import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { Pool, PoolClient } from 'pg';
import { MIGRATIONS_DIR, SCHEMA_SNAPSHOT_FILE, migrate } from './migrate';
import { createPool } from './pg-pool';
import { adminQuery } from './admin-query';
import { openScratchServer } from './scratch-server';

/**
 * migrations/schema.sql: the schema the migrations leave, in one file a person can read. Written by
 * `npm run schema:snapshot` from the catalog of a freshly migrated scratch database (SQL queries, not
 * pg_dump, whose output changes between versions); nothing applies it. schema-snapshot.int-spec.ts
 * fails when the migrations no longer leave what it says.
 *
 * Read in one transaction with fixed settings (search path, date and time styles), so that the same
 * schema reads the same on any server: PostgreSQL 15 to 18 give the same text (PostgreSQL 18's NOT
 * NULL constraints are shown as the columns' NOT NULL, as before it). Every list is ordered by name.
 *
 * What it holds: extensions (without their version, which comes with the server), schemas, types
 * (enums, domains, composites), tables (columns, constraints, partition key, storage options), their
 * fixed partitions, indexes (of the tables themselves, not the copies partitions get), extended
 * statistics, views, sequences, functions and procedures (pg_get_functiondef: their final form, each
 * once), triggers. Partitions named by a date (`runs_d20261206`, `events_w20261207`) depend on the day
 * the migrations ran: each table's are named by their pattern (`runs_dYYYYMMDD`) and left out.
 */

export const SCHEMA_SNAPSHOT_PATH = path.join(MIGRATIONS_DIR, SCHEMA_SNAPSHOT_FILE);

const HEADER = `-- GENERATED FILE: do not edit. The schema the migrations in this folder leave, read from the catalog
-- of a freshly migrated database by \`npm run schema:snapshot\` (libs/platform/src/database/schema-snapshot.ts).
-- Nothing applies this file: the numbered migrations are the source (migrations/README.md). Regenerate
-- and commit it with every migration; schema-snapshot.int-spec.ts fails while it differs.
--
-- Partitions named by a date are made for the days around the day the migrations ran (and later by the
-- retention passes): each table's are named by their pattern (YYYYMMDD) and left out.
`;

/** A partition named by a date: `<prefix>YYYYMMDD`, the prefix ending in `_` and a letter or none. */
const DATED_PARTITION = /^(.*_[a-z]?)(\d{8})$/;

/** Settings that decide how constants, names and types are printed. */
const READ_SETTINGS = [
  `SET LOCAL search_path = public`,
  `SET LOCAL DateStyle = 'ISO, MDY'`,
  `SET LOCAL IntervalStyle = 'postgres'`,
  `SET LOCAL TimeZone = 'UTC'`,
  `SET LOCAL extra_float_digits = 1`,
  `SET LOCAL bytea_output = 'hex'`,
];

/** The schemas of ours: not the system's, nor the temporary ones, nor an extension's. */
const OUR_SCHEMA = (namespace: string): string =>
  `(${namespace}.nspname NOT IN ('pg_catalog', 'information_schema') AND ${namespace}.nspname NOT LIKE 'pg\\_toast%'
    AND ${namespace}.nspname NOT LIKE 'pg\\_temp\\_%')`;

/** Not created by an extension (CREATE EXTENSION's objects are the extension's). */
const NOT_OF_AN_EXTENSION = (catalog: string, oid: string): string =>
  `NOT EXISTS (SELECT 1 FROM pg_depend x WHERE x.classid = '${catalog}'::regclass AND x.objid = ${oid} AND x.deptype = 'e')`;

interface Relation {
  oid: number;
  name: string;
  kind: 'r' | 'p' | 'v' | 'm' | 'c';
  persistence: string;
  options: string | null;
  toastOptions: string | null;
  partitionKey: string | null;
  parent: number | null;
  bound: string | null;
  rawName: string;
}

interface Column {
  relation: number;
  name: string;
  definition: string;
}

/** migrations/schema.sql as the database behind `pool` has its schema. */
export async function readSchemaSnapshot(pool: Pool): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    try {
      for (const setting of READ_SETTINGS) await client.query(setting);
      return await readCatalog(client);
    } finally {
      await client.query('ROLLBACK');
    }
  } finally {
    client.release();
  }
}

async function readCatalog(db: PoolClient): Promise<string> {
  const rows = async <T>(sql: string, values: unknown[] = []): Promise<T[]> =>
    (await db.query(sql, values)).rows as T[];

  const relations = await rows<Relation>(
    `SELECT c.oid AS oid, c.oid::regclass::text AS name, c.relname AS "rawName", c.relkind AS kind,
            c.relpersistence AS persistence,
            (SELECT string_agg(o, ', ' ORDER BY o COLLATE "C") FROM unnest(c.reloptions) o) AS options,
            (SELECT string_agg('toast.' || o, ', ' ORDER BY o COLLATE "C")
               FROM pg_class t, unnest(t.reloptions) o WHERE t.oid = c.reltoastrelid) AS "toastOptions",
            CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END AS "partitionKey",
            CASE WHEN c.relispartition
                 THEN (SELECT i.inhparent FROM pg_inherits i WHERE i.inhrelid = c.oid) END AS parent,
            CASE WHEN c.relispartition THEN pg_get_expr(c.relpartbound, c.oid) END AS bound
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p', 'v', 'm', 'c') AND ${OUR_SCHEMA('n')} AND ${NOT_OF_AN_EXTENSION('pg_class', 'c.oid')}
        AND (c.relkind <> 'c' OR EXISTS (SELECT 1 FROM pg_type t WHERE t.typrelid = c.oid AND t.typtype = 'c'))
      ORDER BY c.oid::regclass::text COLLATE "C"`,
  );
  // Date-named partitions: left out, named by their patterns under their tables.
  const datedPatterns = new Map<number, Set<string>>();
  const shown = relations.filter((r) => {
    const dated = r.parent === null ? null : DATED_PARTITION.exec(r.rawName);
    if (r.parent === null || dated === null) return true;
    const patterns = datedPatterns.get(r.parent) ?? new Set<string>();
    patterns.add(`${dated[1]}YYYYMMDD`);
    datedPatterns.set(r.parent, patterns);
    return false;
  });
  const shownOids = shown.map((r) => r.oid);
  const nameOf = new Map(relations.map((r) => [r.oid, r.name]));

  const columns = await rows<Column>(
    `SELECT a.attrelid AS relation, quote_ident(a.attname) AS name,
            concat_ws(' ', quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
              CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
                   THEN 'COLLATE ' || a.attcollation::regcollation::text END,
              CASE a.attidentity WHEN 'a' THEN 'GENERATED ALWAYS AS IDENTITY'
                                 WHEN 'd' THEN 'GENERATED BY DEFAULT AS IDENTITY' END,
              CASE a.attgenerated WHEN 's' THEN 'GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) || ') STORED'
                                  WHEN 'v' THEN 'GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) || ') VIRTUAL'
              END,
              CASE WHEN a.attnotnull THEN 'NOT NULL' END,
              CASE WHEN a.attgenerated = '' AND d.adbin IS NOT NULL THEN 'DEFAULT ' || pg_get_expr(d.adbin, d.adrelid) END
            ) AS definition
       FROM pg_attribute a
       JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attrelid, a.attnum`,
    [shownOids],
  );
  // Constraints a table has of its own (a partition's inherited ones are its table's); PostgreSQL 18's
  // NOT NULL constraints (contype 'n') are the columns' NOT NULL.
  const constraints = await rows<{ relation: number; definition: string }>(
    `SELECT c.conrelid AS relation, format('CONSTRAINT %I %s', c.conname, pg_get_constraintdef(c.oid)) AS definition
       FROM pg_constraint c
      WHERE c.conrelid = ANY($1::oid[]) AND c.contype <> 'n' AND c.conislocal
      ORDER BY c.conname COLLATE "C"`,
    [shownOids],
  );

  const sections: Array<[string, string[]]> = [];

  sections.push([
    'Extensions',
    (
      await rows<{ sql: string }>(
        `SELECT format('CREATE EXTENSION %I WITH SCHEMA %I;', e.extname, n.nspname) AS sql
           FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace ORDER BY e.extname COLLATE "C"`,
      )
    ).map((r) => r.sql),
  ]);

  sections.push([
    'Schemas',
    (
      await rows<{ sql: string }>(
        `SELECT format('CREATE SCHEMA %I;', n.nspname) AS sql FROM pg_namespace n
          WHERE ${OUR_SCHEMA('n')} AND n.nspname <> 'public' AND ${NOT_OF_AN_EXTENSION('pg_namespace', 'n.oid')}
          ORDER BY n.nspname COLLATE "C"`,
      )
    ).map((r) => r.sql),
  ]);

  const types = await rows<{ name: string; sql: string }>(
    `SELECT t.oid::regtype::text AS name,
            CASE t.typtype
              WHEN 'e' THEN format('CREATE TYPE %s AS ENUM (%s);', t.oid::regtype,
                (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)
                   FROM pg_enum e WHERE e.enumtypid = t.oid))
              ELSE concat_ws(' ', format('CREATE DOMAIN %s AS %s', t.oid::regtype, format_type(t.typbasetype, t.typtypmod)),
                CASE WHEN t.typcollation <> 0 AND t.typcollation <> b.typcollation
                     THEN 'COLLATE ' || t.typcollation::regcollation::text END,
                CASE WHEN t.typnotnull THEN 'NOT NULL' END,
                'DEFAULT ' || t.typdefault,
                (SELECT string_agg(format('CONSTRAINT %I %s', k.conname, pg_get_constraintdef(k.oid)), ' '
                                   ORDER BY k.conname COLLATE "C")
                   FROM pg_constraint k WHERE k.contypid = t.oid AND k.contype <> 'n')) || ';'
            END AS sql
       FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
       LEFT JOIN pg_type b ON b.oid = t.typbasetype
      WHERE t.typtype IN ('e', 'd') AND ${OUR_SCHEMA('n')} AND ${NOT_OF_AN_EXTENSION('pg_type', 't.oid')}
      ORDER BY t.oid::regtype::text COLLATE "C"`,
  );
  const composites = shown
    .filter((r) => r.kind === 'c')
    .map((r) => ({ name: r.name, sql: `CREATE TYPE ${r.name} AS (\n${columnsOf(r.oid).join(',\n')}\n);` }));
  sections.push(['Types', [...types, ...composites].sort((a, b) => byName(a.name, b.name)).map((t) => t.sql)]);

  function columnsOf(relation: number): string[] {
    return columns.filter((c) => c.relation === relation).map((c) => `  ${c.definition}`);
  }

  function tableStatement(table: Relation): string {
    const unlogged = table.persistence === 'u' ? 'UNLOGGED ' : '';
    const lines: string[] = [];
    if (table.parent === null) {
      const body = [
        ...columnsOf(table.oid),
        ...constraints.filter((c) => c.relation === table.oid).map((c) => `  ${c.definition}`),
      ];
      lines.push(`CREATE ${unlogged}TABLE ${table.name} (\n${body.join(',\n')}\n)`);
    } else {
      // A partition has its table's columns; those it defines otherwise (a default of its own) are shown.
      const parentColumns = new Map(
        columns.filter((c) => c.relation === table.parent).map((c) => [c.name, c.definition]),
      );
      const own = columns.filter((c) => c.relation === table.oid && parentColumns.get(c.name) !== c.definition);
      const body = [
        ...own.map((c) => `  ${c.definition}`),
        ...constraints.filter((c) => c.relation === table.oid).map((c) => `  ${c.definition}`),
      ];
      const parent = nameOf.get(table.parent) ?? String(table.parent);
      lines.push(
        `CREATE ${unlogged}TABLE ${table.name} PARTITION OF ${parent}` +
          (body.length > 0 ? ` (\n${body.join(',\n')}\n)` : '') +
          ` ${table.bound ?? ''}`,
      );
    }
    if (table.partitionKey !== null) lines.push(`PARTITION BY ${table.partitionKey}`);
    const options = [table.options, table.toastOptions].filter((o) => o !== null).join(', ');
    if (options !== '') lines.push(`WITH (${options})`);
    const patterns = [...(datedPatterns.get(table.oid) ?? [])].sort(byName);
    return (
      lines.join('\n') +
      ';' +
      patterns.map((p) => `\n-- and its partitions by date, ${p} (left out: they depend on the day)`).join('')
    );
  }

  sections.push(['Tables', shown.filter((r) => r.kind === 'r' || r.kind === 'p').map(tableStatement)]);

  // A partitioned table's indexes are printed ON ONLY by PostgreSQL (the parent's own entry); written as
  // the migrations write them, which is what the schema has: the index on every partition. The indexes
  // of a primary key, unique or exclusion constraint are the constraint's, shown with the table.
  const indexes = await rows<{ sql: string; partitioned: boolean }>(
    `SELECT pg_get_indexdef(i.indexrelid) AS sql, t.relkind = 'p' AS partitioned
       FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
      WHERE i.indrelid = ANY($1::oid[])
        AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)
        AND NOT EXISTS (SELECT 1 FROM pg_constraint k
                         WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid AND k.contype IN ('p', 'u', 'x'))
      ORDER BY ic.oid::regclass::text COLLATE "C"`,
    [shownOids],
  );
  sections.push(['Indexes', indexes.map((i) => `${i.partitioned ? i.sql.replace(' ON ONLY ', ' ON ') : i.sql};`)]);

  sections.push([
    'Extended statistics',
    (
      await rows<{ sql: string }>(
        `SELECT pg_get_statisticsobjdef(s.oid) || ';' AS sql
           FROM pg_statistic_ext s JOIN pg_namespace n ON n.oid = s.stxnamespace
          WHERE s.stxrelid = ANY($1::oid[]) ORDER BY n.nspname COLLATE "C", s.stxname COLLATE "C"`,
        [shownOids],
      )
    ).map((r) => r.sql),
  ]);

  const views = await rows<{ oid: number; definition: string }>(
    `SELECT c.oid AS oid, pg_get_viewdef(c.oid, true) AS definition FROM pg_class c WHERE c.oid = ANY($1::oid[])`,
    [shown.filter((r) => r.kind === 'v' || r.kind === 'm').map((r) => r.oid)],
  );
  sections.push([
    'Views',
    shown
      .filter((r) => r.kind === 'v' || r.kind === 'm')
      .map((view) => {
        const definition = views.find((v) => v.oid === view.oid)?.definition.trim() ?? '';
        const materialized = view.kind === 'm' ? 'MATERIALIZED ' : '';
        const options = view.options === null ? '' : ` WITH (${view.options})`;
        return `CREATE ${materialized}VIEW ${view.name}${options} AS\n${definition.replace(/;$/, '')};`;
      }),
  ]);

  const sequences = await rows<{ sql: string; owner: number | null }>(
    `SELECT concat_ws(' ', 'CREATE SEQUENCE ' || c.oid::regclass::text, 'AS ' || format_type(s.seqtypid, NULL),
              'START WITH ' || s.seqstart, 'INCREMENT BY ' || s.seqincrement, 'MINVALUE ' || s.seqmin,
              'MAXVALUE ' || s.seqmax, 'CACHE ' || s.seqcache, CASE WHEN s.seqcycle THEN 'CYCLE' END) || ';'
              || coalesce((SELECT CASE d.deptype
                                    WHEN 'i' THEN format(E'\\n-- the identity of %s.%I', d.refobjid::regclass, a.attname)
                                    ELSE format(E'\\nALTER SEQUENCE %s OWNED BY %s.%I;', c.oid::regclass, d.refobjid::regclass, a.attname)
                                  END
                             FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                            WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                              AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')), '') AS sql,
            (SELECT d.refobjid FROM pg_depend d
              WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')) AS owner
       FROM pg_class c JOIN pg_sequence s ON s.seqrelid = c.oid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'S' AND ${OUR_SCHEMA('n')} AND ${NOT_OF_AN_EXTENSION('pg_class', 'c.oid')}
      ORDER BY c.oid::regclass::text COLLATE "C"`,
  );
  const shownSet = new Set(shownOids);
  sections.push(['Sequences', sequences.filter((s) => s.owner === null || shownSet.has(s.owner)).map((s) => s.sql)]);

  sections.push([
    'Functions and procedures',
    (
      await rows<{ sql: string }>(
        `SELECT pg_get_functiondef(p.oid) AS sql
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE p.prokind IN ('f', 'p') AND ${OUR_SCHEMA('n')} AND ${NOT_OF_AN_EXTENSION('pg_proc', 'p.oid')}
          ORDER BY n.nspname COLLATE "C", p.proname COLLATE "C", pg_get_function_identity_arguments(p.oid) COLLATE "C"`,
      )
    ).map((r) => `${r.sql.trimEnd()};`),
  ]);

  sections.push([
    'Triggers',
    (
      await rows<{ sql: string }>(
        `SELECT pg_get_triggerdef(t.oid, true) || ';' AS sql FROM pg_trigger t
          WHERE t.tgrelid = ANY($1::oid[]) AND NOT t.tgisinternal AND t.tgparentid = 0
          ORDER BY t.tgrelid::regclass::text COLLATE "C", t.tgname COLLATE "C"`,
        [shownOids],
      )
    ).map((r) => r.sql),
  ]);

  return (
    HEADER +
    sections
      .map(([title, statements]) =>
        statements.length === 0
          ? `\n-- ${title}: none\n`
          : `\n-- ${title}\n` + statements.map((s) => `\n${s}\n`).join(''),
      )
      .join('')
  );
}

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Where two snapshots part: the first differing lines (at most `lines` of each side), with the line
 * before them, `-` the committed file's and `+` the database's.
 */
export function snapshotDifference(committed: string, actual: string, lines = 12): string {
  const was = committed.split('\n');
  const is = actual.split('\n');
  let first = 0;
  while (first < was.length && first < is.length && was[first] === is[first]) first++;
  // The end both share, so that a changed line shows as itself and not as the rest of the file.
  let tail = 0;
  while (
    tail < was.length - first &&
    tail < is.length - first &&
    was[was.length - 1 - tail] === is[is.length - 1 - tail]
  )
    tail++;
  const removed = was.slice(first, was.length - tail);
  const added = is.slice(first, is.length - tail);
  const clip = (side: string[], sign: string): string[] => [
    ...side.slice(0, lines).map((line) => `${sign} ${line}`),
    ...(side.length > lines ? [`${sign} ... (${side.length - lines} lines more)`] : []),
  ];
  return [
    `@@ line ${first + 1} (- migrations/schema.sql, + the migrated database)`,
    ...(first > 0 ? [`  ${was[first - 1]}`] : []),
    ...clip(removed, '-'),
    ...clip(added, '+'),
  ].join('\n');
}

/** The snapshot of a scratch database migrated from migrations/ on the server at `serverUrl`, then dropped. */
export async function snapshotOfMigrations(serverUrl: string): Promise<string> {
  const name = `schema_snapshot_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  try {
    await migrate(url.toString());
    const pool = createPool({ connectionString: url.toString(), max: 1, applicationName: 'schema-snapshot' });
    try {
      return await readSchemaSnapshot(pool);
    } finally {
      await pool.end();
    }
  } finally {
    await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

/**
 * `npm run schema:snapshot`: writes migrations/schema.sql. On DATABASE_URL's server when set (a scratch
 * database there, dropped after), else on an embedded PostgreSQL of its own, as the tests do.
 */
async function main(): Promise<void> {
  const server = await openScratchServer('schema-snapshot-pg-', { unsafeFast: true });
  try {
    const snapshot = await snapshotOfMigrations(server.url);
    await writeFile(SCHEMA_SNAPSHOT_PATH, snapshot);
    process.stdout.write(`wrote ${path.relative(process.cwd(), SCHEMA_SNAPSHOT_PATH)}\n`);
  } finally {
    await server.stop();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`schema:snapshot: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
