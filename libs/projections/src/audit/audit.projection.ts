import { isRunStream } from '@chronicle/domain';
import type { RecordedEvent } from '@chronicle/event-store';
import { copyRows, type Queryable } from '@chronicle/platform';
import type { BulkBuild, BulkIo, Projection } from '../projection';

/**
 * The audit trail's index of the streams that never end (migrations/0015, 0024): a row per event of a
 * job, a team or the platform, with the team whose stream it is. Runs' events are not here: the audit
 * trail reads them from the log itself (EventStore.findEvents), each recording its run's team. A job's
 * team is read from its row (this projection runs after the jobs projection, in the same transaction); a
 * `team-<id>` stream is that team's. Rows are keyed by log position, so a batch applied again changes
 * nothing.
 */
export const auditProjection: Projection = {
  name: 'audit',
  version: 2,
  eventTypes: 'all',
  tables: ['audit_events'],
  // Only the projector writes it: a rebuild is exactly the log up to its checkpoint.
  writtenThrough: false,

  async apply(db: Queryable, all: readonly RecordedEvent[]): Promise<void> {
    const events = all.filter(indexed);
    if (events.length === 0) return;
    await db.query({
      name: 'audit_index_events',
      text: `INSERT INTO audit_events (commit_position, prepare_position, stream_id, revision, event_type, actor, team, correlation_id, recorded_at)
             SELECT e.commit_position, e.prepare_position, e.stream_id, e.revision, e.event_type, e.actor,
                    COALESCE(e.team, CASE
                      WHEN e.stream_id LIKE 'job-%' THEN (SELECT j.team FROM jobs j WHERE j.name = substr(e.stream_id, 5))
                      WHEN e.stream_id LIKE 'team-%' THEN substr(e.stream_id, 6)
                    END),
                    e.correlation_id, e.recorded_at
               FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[])
                    AS e(commit_position, prepare_position, stream_id, revision, event_type, actor, team, correlation_id, recorded_at)
             ON CONFLICT (commit_position, prepare_position) DO NOTHING`,
      values: [
        events.map((e) => e.position.commit.toString()),
        events.map((e) => e.position.prepare.toString()),
        events.map((e) => e.streamId),
        events.map((e) => e.revision.toString()),
        events.map((e) => e.type),
        events.map((e) => stringOrNull(e.metadata['actor'])),
        events.map(teamInData),
        events.map((e) => stringOrNull(e.metadata['correlationId'])),
        events.map((e) => e.recordedAt),
      ],
    });
  },

  bulkBuild: buildAuditInBulk,

  async reset(db: Queryable): Promise<void> {
    await db.query('TRUNCATE audit_events');
  },
};

const COLUMNS = [
  'commit_position',
  'prepare_position',
  'stream_id',
  'revision',
  'event_type',
  'actor',
  'team',
  'correlation_id',
  'recorded_at',
];

/**
 * The index from an empty table, by COPY. Every stream's first event names its team (the log is read
 * from its start), so the teams are remembered instead of read from the jobs' rows per batch; a
 * stream whose first event is not in the log is looked up as `apply` does.
 */
export function buildAuditInBulk(): BulkBuild {
  const teams = new Map<string, string | null>();
  return {
    async add(io: BulkIo, all: readonly RecordedEvent[]): Promise<void> {
      const events = all.filter(indexed);
      if (events.length === 0) return;
      const unknown = new Set<string>();
      for (const event of events) {
        if (event.revision === 0n || event.streamId.startsWith('team-')) teams.set(event.streamId, teamOfFirst(event));
        else if (!teams.has(event.streamId)) unknown.add(event.streamId);
      }
      if (unknown.size > 0)
        for (const [stream, team] of await io.read((db) => teamsOfJobs(db, [...unknown]))) teams.set(stream, team);
      const rows = events.map((e) => [
        e.position.commit,
        e.position.prepare,
        e.streamId,
        e.revision,
        e.type,
        stringOrNull(e.metadata['actor']),
        teams.get(e.streamId) ?? null,
        stringOrNull(e.metadata['correlationId']),
        e.recordedAt,
      ]);
      await io.write((db) => copyRows(db, 'audit_events', COLUMNS, rows));
    },
    flush: async () => undefined,
  };
}

/** The streams indexed here: those that never end (runs' are read from the log). */
function indexed(event: RecordedEvent): boolean {
  return !isRunStream(event.streamId);
}

function teamOfFirst(event: RecordedEvent): string | null {
  if (event.streamId.startsWith('team-')) return event.streamId.slice('team-'.length);
  return teamInData(event);
}

/** The teams of job streams, from their rows (the other streams: none). */
async function teamsOfJobs(db: Queryable, streams: readonly string[]): Promise<Map<string, string | null>> {
  const { rows } = await db.query<{ stream_id: string; team: string | null }>(
    `SELECT s.stream_id, (SELECT j.team FROM jobs j WHERE s.stream_id LIKE 'job-%' AND j.name = substr(s.stream_id, 5)) AS team
       FROM unnest($1::text[]) AS s(stream_id)`,
    [streams],
  );
  return new Map(rows.map((r) => [r.stream_id, r.team]));
}

/**
 * A job's first event names its team in its data. Only that one's data is looked at: the log's reader
 * parses data on first use, and most events' the index never needs.
 */
function teamInData(event: RecordedEvent): string | null {
  if (event.revision !== 0n) return null;
  const data = event.data as { team?: unknown; definition?: { team?: unknown } } | null;
  return stringOrNull(data?.team) ?? stringOrNull(data?.definition?.team);
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}
