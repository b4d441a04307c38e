import type { EventMetadata } from '../event-store.port';

/**
 * The PostgreSQL log keeps the metadata keys every decision records in columns of `events` of their
 * own (migrations/0035): who decided, the team whose the event is, the request that caused it and
 * the shape of its data. A row then holds their values alone, and the audit index by team is a plain
 * index over a column. `metadata` holds the other keys, NULL when there are none. A value of another
 * type than its column's stays in the JSON, so what is read back is what was written.
 */
export interface MetadataColumns {
  readonly actor: string | null;
  readonly team: string | null;
  readonly correlation_id: string | null;
  readonly schema_version: number | null;
  /** The keys left over, or null. */
  readonly metadata: EventMetadata | null;
}

const SMALLINT = 32_767;

/** An event's metadata as its row holds it. */
export function metadataColumns(metadata: EventMetadata | undefined): MetadataColumns {
  let actor: string | null = null;
  let team: string | null = null;
  let correlationId: string | null = null;
  let schemaVersion: number | null = null;
  let rest: Record<string, unknown> | null = null;
  if (metadata !== undefined)
    for (const key in metadata) {
      const value = metadata[key];
      if (key === 'actor' && typeof value === 'string') actor = value;
      else if (key === 'team' && typeof value === 'string') team = value;
      else if (key === 'correlationId' && typeof value === 'string') correlationId = value;
      else if (key === 'schemaVersion' && Number.isInteger(value) && Math.abs(value as number) <= SMALLINT)
        schemaVersion = value as number;
      else if (value !== undefined) (rest ??= {})[key] = value;
    }
  return { actor, team, correlation_id: correlationId, schema_version: schemaVersion, metadata: rest };
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
