import type { EventMetadata } from '../event-store.port';

/**
 * The PostgreSQL log keeps the metadata keys every decision records in columns of `events` of their
 * own (migrations/0035): who decided, the team whose the event is, the request that caused it and
 * the shape of its data. A row then holds their values alone, and the audit index by team is a plain
 * index over a column. `metadata` holds the other keys, NULL when there are none. A value of another
 * type than its column's stays in the JSON, so what is read back is what was written.
 */
/**
 * An event's metadata as es_append takes it, beside the event's other fields: a column's value only
 * where the metadata has it (json_to_recordset reads a key left out as NULL), `cu` the correlation id
 * when it is a UUID in lowercase canonical text (its own 16-byte column, migrations/0037: what the
 * server makes for a request that names none), `cid` when it is another string, `sv` the schema
 * version; `metadata` the keys left over, if any.
 */
export interface MetadataColumns {
  actor?: string;
  team?: string;
  cu?: string;
  cid?: string;
  sv?: number;
  metadata?: Record<string, unknown>;
}

const SMALLINT = 32_767;

/** A UUID as PostgreSQL writes one back: what goes into the uuid column reads back the same. */
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `row` with `metadata` written into it as its columns (MetadataColumns), for es_append or an import. */
export function withMetadataColumns<Row extends object>(
  row: Row,
  metadata: EventMetadata | undefined,
): Row & MetadataColumns {
  const columns: Row & MetadataColumns = row;
  if (metadata !== undefined)
    for (const key in metadata) {
      const value = metadata[key];
      if (key === 'actor' && typeof value === 'string') columns.actor = value;
      else if (key === 'team' && typeof value === 'string') columns.team = value;
      else if (key === 'correlationId' && typeof value === 'string') {
        if (CANONICAL_UUID.test(value)) columns.cu = value;
        else columns.cid = value;
      } else if (key === 'schemaVersion' && Number.isInteger(value) && Math.abs(value as number) <= SMALLINT)
        columns.sv = value as number;
      else if (value !== undefined) (columns.metadata ??= {})[key] = value;
    }
  return columns;
}

/** The columns of a row read back as one metadata object, the other keys (`rest`, JSON text) after the column's. */
export function metadataFromColumns(row: {
  readonly actor: string | null;
  readonly team: string | null;
  readonly correlation_id: string | null;
  readonly schema_version: number | null;
  readonly metadata: string | null;
}): EventMetadata {
  return {
    ...(row.actor === null ? {} : { actor: row.actor }),
    ...(row.schema_version === null ? {} : { schemaVersion: row.schema_version }),
    ...(row.team === null ? {} : { team: row.team }),
    ...(row.metadata === null ? {} : (JSON.parse(row.metadata) as EventMetadata)),
    ...(row.correlation_id === null ? {} : { correlationId: row.correlation_id }),
  };
}
