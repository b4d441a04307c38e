import { Inject } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { listedTeam, type ReaderCaller, isRunStream, RUN_STREAM_PREFIX } from '@chronicle/domain';
import { comparePositions, type EventStore, type LogPosition, type RecordedEvent } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL, type Queryable } from '@chronicle/platform';
import { decodeCursor, encodeCursor, notACursor, sizeOf, type Page, type PageRequest } from '../listings/page';
import { sqlValues } from '../listings/sql-values';

/** The filters of GET /v1/audit and GraphQL's auditEvents: each given narrows the events listed. */
export interface AuditFilter {
  readonly actor?: string | undefined;
  readonly type?: string | undefined;
  readonly stream?: string | undefined;
  /** Recorded at or after. */
  readonly since?: Date | undefined;
  /** Recorded before. */
  readonly until?: Date | undefined;
  /** The admin's choice of one team; a team is always kept to its own. */
  readonly team?: string | undefined;
}

/** An event of the audit trail: the event as the log holds it, and the team whose stream it is. */
export interface AuditEvent {
  readonly event: RecordedEvent;
  /** null: the platform's own (the admin sees those). */
  readonly team: string | null;
}

/** The events of the log a team (its own streams') or the admin (all) may see, newest first. */
export class ListAuditEvents extends Query<Page<AuditEvent>> {
  constructor(
    readonly caller: ReaderCaller,
    readonly filter: AuditFilter,
    readonly page: PageRequest,
  ) {
    super();
  }
}

@QueryHandler(ListAuditEvents)
export class ListAuditEventsHandler implements IQueryHandler<ListAuditEvents> {
  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
  ) {}

  async execute({ caller, filter, page }: ListAuditEvents): Promise<Page<AuditEvent>> {
    const size = sizeOf(page);
    const after = page.after == null ? undefined : decodePositionCursor(page.after, page.names.after);
    const listed = { ...filter, team: listedTeam(caller, filter.team) };
    // Two sources, each newest first and each a page long: the log for runs' events, the index for the rest.
    const [runs, others] = await Promise.all([
      filter.stream === undefined || isRunStream(filter.stream) ? this.findRunEvents(listed, after, size + 1) : [],
      filter.stream === undefined || !isRunStream(filter.stream) ? this.findIndexed(listed, after, size + 1) : [],
    ]);
    const merged = [...runs, ...others].sort((a, b) => comparePositions(b.event.position, a.event.position));
    const shown = merged.slice(0, size);
    const cursorOf = ({ event }: AuditEvent): string =>
      encodeCursor([event.position.commit.toString(), event.position.prepare.toString()]);
    const last = shown[shown.length - 1];
    return {
      items: shown.map((node) => ({ node, cursor: cursorOf(node) })),
      nextCursor: merged.length > size && last !== undefined ? cursorOf(last) : null,
    };
  }

  /** Runs' events, from the log: each records its run's team. */
  private async findRunEvents(
    filter: AuditFilter,
    after: LogPosition | undefined,
    limit: number,
  ): Promise<AuditEvent[]> {
    const events = await this.eventStore.findEvents({
      streamPrefix: RUN_STREAM_PREFIX,
      streamId: filter.stream,
      type: filter.type,
      team: filter.team,
      actor: filter.actor,
      since: filter.since,
      until: filter.until,
      before: after,
      maxCount: limit,
    });
    return events.map((event) => {
      const team = event.metadata['team'];
      return { event, team: typeof team === 'string' ? team : null };
    });
  }

  /** The other streams' events, by the audit index; the index says which events, the log holds them. */
  private async findIndexed(filter: AuditFilter, after: LogPosition | undefined, limit: number): Promise<AuditEvent[]> {
    const rows = await findAuditRows(this.pool, filter, after, limit);
    const events = await this.eventStore.readEvents(
      rows.map((row) => ({ streamId: row.stream_id, revision: BigInt(row.revision) })),
    );
    const byRef = new Map(events.map((e) => [`${e.revision}|${e.streamId}`, e]));
    return rows.flatMap((row) => {
      const event = byRef.get(`${row.revision}|${row.stream_id}`);
      // Not in the log any more: nothing to show.
      return event === undefined ? [] : [{ event, team: row.team }];
    });
  }
}

interface AuditRow {
  readonly stream_id: string;
  readonly revision: string;
  readonly team: string | null;
}

/**
 * A page of the audit index (the streams that never end), newest first, after `after` (exclusive): one backwards range scan of the
 * index whose key leads with the filter given (the team's, the actor's, the stream's or the type's),
 * or of the primary key. The SQL holds only the filters given, so each statement is planned for its
 * index.
 */
async function findAuditRows(
  db: Queryable,
  filter: AuditFilter,
  after: LogPosition | undefined,
  limit: number,
): Promise<AuditRow[]> {
  const { values, param } = sqlValues();
  const conditions: string[] = [];
  if (filter.team !== undefined) conditions.push(`team = ${param(filter.team)}`);
  if (filter.actor !== undefined) conditions.push(`actor = ${param(filter.actor)}`);
  if (filter.stream !== undefined) conditions.push(`stream_id = ${param(filter.stream)}`);
  if (filter.type !== undefined) conditions.push(`event_type = ${param(filter.type)}`);
  if (filter.since !== undefined) conditions.push(`recorded_at >= ${param(filter.since)}`);
  if (filter.until !== undefined) conditions.push(`recorded_at < ${param(filter.until)}`);
  if (after !== undefined)
    conditions.push(
      `(commit_position, prepare_position) < (${param(after.commit.toString())}, ${param(after.prepare.toString())})`,
    );
  const { rows } = await db.query<AuditRow>({
    text: `SELECT stream_id, revision::text, team FROM audit_events
            ${conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`}
            ORDER BY commit_position DESC, prepare_position DESC
            LIMIT ${param(limit)}`,
    values,
  });
  return rows;
}

function decodePositionCursor(value: string, field: string): LogPosition {
  const [commit, prepare] = decodeCursor(value, 2, field) as [string, string];
  if (!/^-?\d{1,19}$/.test(commit) || !/^-?\d{1,19}$/.test(prepare)) throw notACursor(field);
  return { commit: BigInt(commit), prepare: BigInt(prepare) };
}
