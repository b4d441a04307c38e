import { recordedRunPlace } from '@chronicle/domain';
import { streamEnds, type RecordedEvent } from '@chronicle/event-store';
import { copyRows, utcWeek, type Queryable } from '@chronicle/platform';
import type { BulkBuild, BulkIo, Projection } from '../projection';

/**
 * The audit trail's index (migrations/0015): a row per event of the log, whoever wrote it, with the
 * team whose stream it is. A run's or a job's team is read from its row (this projection runs after
 * theirs, in the same transaction); a `team-<id>` stream is that team's. Rows are keyed by log
 * position, so a batch applied again changes nothing. A run's events are kept by the UTC week they
 * were recorded in, the other streams' for ever (`kept_on`, migrations/0020: run retention drops
 * the weeks past retention, as the log's).
 */
export const auditProjection: Projection = {
  name: 'audit',
  version: 1,
  eventTypes: 'all',
  tables: ['audit_events'],
  // Only the projector writes it: a rebuild is exactly the log up to its checkpoint.
  writtenThrough: false,

  async apply(db: Queryable, events: readonly RecordedEvent[]): Promise<void> {
    if (events.length === 0) return;
    await db.query({
      name: 'audit_index_events',
      text: `INSERT INTO audit_events (commit_position, prepare_position, stream_id, revision, event_type, actor, team, correlation_id, recorded_at, kept_on)
             SELECT e.commit_position, e.prepare_position, e.stream_id, e.revision, e.event_type, e.actor,
                    COALESCE(e.team, CASE
                      WHEN e.stream_id LIKE 'run-%' THEN (SELECT r.team FROM runs r WHERE r.run_id = substr(e.stream_id, 5))
                      WHEN e.stream_id LIKE 'job-%' THEN (SELECT j.team FROM jobs j WHERE j.name = substr(e.stream_id, 5))
                      WHEN e.stream_id LIKE 'team-%' THEN substr(e.stream_id, 6)
                    END),
                    e.correlation_id, e.recorded_at, e.kept_on
               FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::date[])
                    AS e(commit_position, prepare_position, stream_id, revision, event_type, actor, team, correlation_id, recorded_at, kept_on)
             ON CONFLICT (commit_position, prepare_position, kept_on) DO NOTHING`,
      values: [
        events.map((e) => e.position.commit.toString()),
        events.map((e) => e.position.prepare.toString()),
        events.map((e) => e.streamId),
        events.map((e) => e.revision.toString()),
        events.map((e) => e.type),
        events.map((e) => stringOrNull(e.metadata['actor'])),
        events.map(teamRecorded),
        events.map((e) => stringOrNull(e.metadata['correlationId'])),
        events.map((e) => e.recordedAt),
        events.map(keptOn),
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
  'kept_on',
];
/** Streams whose team the bulk build remembers; past that it forgets them all and asks the rows again. */
const KNOWN_STREAMS = 500_000;

/**
 * The index from empty tables, by COPY. Every stream's first event names its team (the log is read
 * from its start), so the teams are remembered instead of read from the runs' and jobs' rows per
 * batch; a stream forgotten (past KNOWN_STREAMS) is looked up as `apply` does.
 */
export function buildAuditInBulk(): BulkBuild {
  const teams = new Map<string, string | null>();
  return {
    async add(io: BulkIo, events: readonly RecordedEvent[]): Promise<void> {
      const unknown = new Set<string>();
      for (const event of events) {
        if (event.revision === 0n || event.streamId.startsWith('team-')) teams.set(event.streamId, teamOfFirst(event));
        else if (!teams.has(event.streamId)) {
          const recorded = teamRecorded(event);
          if (recorded === null) unknown.add(event.streamId);
          else teams.set(event.streamId, recorded);
        }
      }
      if (unknown.size > 0)
        for (const [stream, team] of await io.read((db) => teamsOfStreams(db, [...unknown]))) teams.set(stream, team);
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
        keptOn(e),
      ]);
      await io.write((db) => copyRows(db, 'audit_events', COLUMNS, rows));
      if (teams.size > KNOWN_STREAMS) teams.clear();
    },
    flush: async () => undefined,
  };
}

/** The audit week a row is kept by: a run's event's UTC week, 'infinity' (kept for ever) for the others. */
export function keptOn(event: RecordedEvent): string {
  return streamEnds(event.streamId) ? utcWeek(event.recordedAt) : 'infinity';
}

function teamOfFirst(event: RecordedEvent): string | null {
  if (event.streamId.startsWith('team-')) return event.streamId.slice('team-'.length);
  return teamInData(event);
}

/** The teams of run and job streams, from their rows (the other streams: none). */
async function teamsOfStreams(db: Queryable, streams: readonly string[]): Promise<Map<string, string | null>> {
  const { rows } = await db.query<{ stream_id: string; team: string | null }>(
    `SELECT s.stream_id, COALESCE(
              (SELECT r.team FROM runs r WHERE s.stream_id LIKE 'run-%' AND r.run_id = substr(s.stream_id, 5)),
              (SELECT j.team FROM jobs j WHERE s.stream_id LIKE 'job-%' AND j.name = substr(s.stream_id, 5))) AS team
       FROM unnest($1::text[]) AS s(stream_id)`,
    [streams],
  );
  return new Map(rows.map((r) => [r.stream_id, r.team]));
}

/**
 * The team an event names itself: a run's events carry it in their metadata (decide-runs.ts), a run's or
 * a job's first event in its data. The others' (older run events among them) are looked up.
 */
function teamRecorded(event: RecordedEvent): string | null {
  return (streamEnds(event.streamId) ? recordedRunPlace(event.metadata)?.team : undefined) ?? teamInData(event);
}

/**
 * The first event of a run or a job names its team. Only that one's data is looked at: the log's
 * reader parses data on first use, and most events' the index never needs.
 */
function teamInData(event: RecordedEvent): string | null {
  if (event.revision !== 0n) return null;
  const data = event.data as { team?: unknown; definition?: { team?: unknown } } | null;
  return stringOrNull(data?.team) ?? stringOrNull(data?.definition?.team);
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}
